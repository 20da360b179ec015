//! A session's queue of messages waiting for it to be free ([`MessageQueue`], stored
//! in its record), with the rules people change it by: a queued message can be
//! cancelled or its text replaced (it keeps its place) until it is sent; messages the
//! server queued (pushed-back results) are not the person's to change; a person's
//! message is refused once [`MAX_QUEUED`] wait.

use serde::{Deserialize, Serialize};
use tandem_protocol::server::QueuedEntry;

use crate::attachments::Attachments;
use crate::error::RuntimeError;

/// Most messages a person may have waiting in one session's queue.
pub const MAX_QUEUED: usize = 100;

/// A message waiting for its session to be free.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueuedMessage {
    /// Its id (`q_…`), named by `chat.queue-cancel` and `chat.queue-edit`. Records
    /// written before ids existed get one when read (stored at the next write).
    #[serde(default = "new_queue_id")]
    pub id: String,
    /// The user message of the turn it starts once the session is free.
    pub text: String,
    /// True when the server wrote it (a pushed-back result).
    #[serde(default)]
    pub internal: bool,
    /// Its images and files, resolved when it was queued.
    #[serde(default, skip_serializing_if = "Attachments::is_empty")]
    pub attachments: Attachments,
}

fn new_queue_id() -> String {
    crate::clock::random_id("q_", 8)
}

impl QueuedMessage {
    /// A new entry with a fresh id.
    pub fn new(text: String, internal: bool) -> Self {
        QueuedMessage {
            id: new_queue_id(),
            text,
            internal,
            attachments: Default::default(),
        }
    }

    /// The entry as the wire lists it.
    pub fn entry(&self) -> QueuedEntry {
        QueuedEntry {
            queue_id: self.id.clone(),
            text: self.text.clone(),
            internal: self.internal,
        }
    }
}

/// The messages waiting, oldest first; stored as a plain list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MessageQueue(Vec<QueuedMessage>);

impl MessageQueue {
    /// True when nothing waits.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The queue as the wire lists it.
    pub fn entries(&self) -> Vec<QueuedEntry> {
        self.0.iter().map(QueuedMessage::entry).collect()
    }

    /// Queues a person's message; its place (1 for the next to run), or
    /// `LIMIT_EXCEEDED` once [`MAX_QUEUED`] wait.
    pub fn offer(&mut self, message: QueuedMessage) -> Result<usize, RuntimeError> {
        if self.0.len() >= MAX_QUEUED {
            return Err(RuntimeError::LimitExceeded(format!(
                "the queue already holds {MAX_QUEUED} messages"
            )));
        }
        self.0.push(message);
        Ok(self.0.len())
    }

    /// Queues a message the server sends (a pushed-back result, a schedule's): never
    /// refused.
    pub fn push(&mut self, message: QueuedMessage) {
        self.0.push(message);
    }

    /// Puts a message first, to run before every other one.
    pub fn push_front(&mut self, message: QueuedMessage) {
        self.0.insert(0, message);
    }

    /// Takes the message to run next.
    pub fn take_next(&mut self) -> Option<QueuedMessage> {
        (!self.0.is_empty()).then(|| self.0.remove(0))
    }

    /// Takes a person's message `id` out of the queue.
    pub fn cancel(&mut self, id: &str) -> Result<(), RuntimeError> {
        let at = self.changeable(id)?;
        self.0.remove(at);
        Ok(())
    }

    /// Replaces the text of a person's message `id`; it keeps its place.
    pub fn edit(&mut self, id: &str, text: String) -> Result<(), RuntimeError> {
        if text.trim().is_empty() {
            return Err(RuntimeError::InvalidArgument(
                "content is empty; cancel the message instead".into(),
            ));
        }
        let at = self.changeable(id)?;
        self.0[at].text = text;
        Ok(())
    }

    /// Where `id` sits, if a person may change it.
    fn changeable(&self, id: &str) -> Result<usize, RuntimeError> {
        let at = self
            .0
            .iter()
            .position(|q| q.id == id)
            .ok_or_else(|| RuntimeError::NoSuchQueuedMessage(id.to_string()))?;
        if self.0[at].internal {
            return Err(RuntimeError::Conflict(
                "a message the server queued (a pushed-back result) cannot be changed".into(),
            ));
        }
        Ok(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(queue: &MessageQueue) -> Vec<String> {
        queue.entries().into_iter().map(|e| e.text).collect()
    }

    #[test]
    fn messages_run_in_order_with_a_pushed_front_one_first() {
        let mut queue = MessageQueue::default();
        assert_eq!(
            queue.offer(QueuedMessage::new("a".into(), false)).ok(),
            Some(1)
        );
        assert_eq!(
            queue.offer(QueuedMessage::new("b".into(), false)).ok(),
            Some(2)
        );
        queue.push_front(QueuedMessage::new("now".into(), false));
        let order: Vec<String> = std::iter::from_fn(|| queue.take_next())
            .map(|m| m.text)
            .collect();
        assert_eq!(order, ["now", "a", "b"]);
        assert!(queue.take_next().is_none());
    }

    #[test]
    fn an_edited_message_keeps_its_place_and_a_cancelled_one_goes() {
        let mut queue = MessageQueue::default();
        for text in ["a", "b", "c"] {
            queue.push(QueuedMessage::new(text.into(), false));
        }
        let ids: Vec<String> = queue.entries().into_iter().map(|e| e.queue_id).collect();
        assert!(queue.edit(&ids[1], "B".into()).is_ok());
        assert!(queue.cancel(&ids[0]).is_ok());
        assert_eq!(texts(&queue), ["B", "c"]);
        assert!(matches!(
            queue.cancel(&ids[0]),
            Err(RuntimeError::NoSuchQueuedMessage(_))
        ));
        assert!(matches!(
            queue.edit(&ids[2], "  ".into()),
            Err(RuntimeError::InvalidArgument(_))
        ));
        assert_eq!(texts(&queue), ["B", "c"]);
    }

    #[test]
    fn the_servers_messages_are_not_a_persons_to_change() {
        let mut queue = MessageQueue::default();
        queue.push(QueuedMessage::new("result".into(), true));
        let id = queue.entries()[0].queue_id.clone();
        assert!(matches!(queue.cancel(&id), Err(RuntimeError::Conflict(_))));
        assert!(matches!(
            queue.edit(&id, "x".into()),
            Err(RuntimeError::Conflict(_))
        ));
        assert_eq!(texts(&queue), ["result"]);
    }

    #[test]
    fn a_full_queue_refuses_a_persons_message_but_not_the_servers() {
        let mut queue = MessageQueue::default();
        for i in 0..MAX_QUEUED {
            assert!(queue
                .offer(QueuedMessage::new(i.to_string(), false))
                .is_ok());
        }
        assert!(matches!(
            queue.offer(QueuedMessage::new("one more".into(), false)),
            Err(RuntimeError::LimitExceeded(_))
        ));
        queue.push(QueuedMessage::new("result".into(), true));
        assert_eq!(queue.entries().len(), MAX_QUEUED + 1);
    }

    #[test]
    fn it_is_stored_as_a_plain_list() {
        let mut queue = MessageQueue::default();
        queue.push(QueuedMessage::new("a".into(), false));
        let json = serde_json::to_value(&queue).unwrap_or_default();
        assert!(json.is_array());
        let back: MessageQueue = serde_json::from_value(json).unwrap_or_default();
        assert_eq!(back, queue);
    }
}
