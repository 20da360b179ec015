//! A user message's content: plain text, or a list of blocks (text, images, files),
//! as `chat.send` and `POST /sessions/{id}/messages` take it, and as a `user_message`
//! event keeps it.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::ids::UploadId;

/// The characters `str::trim` removes (Unicode `White_Space`) as the inside of a
/// JSON Schema character class. The server trims text before it checks it, so the
/// schemas count exactly these as blank: ECMA-262's `\s` and Python's `\s` (which
/// schema tools use) each differ from it, and from each other.
macro_rules! blank {
    () => {
        r"\t\n\u000B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000"
    };
}

/// The inside of a JSON Schema character class of what `str::trim` removes.
pub const BLANK: &str = blank!();

/// JSON Schema `pattern` of a text that is not only blank: one character that
/// `str::trim` keeps.
pub const NOT_BLANK: &str = concat!("[^", blank!(), "]");

/// JSON Schema `pattern` of a title: 1 to 200 characters once trimmed (a blank edge
/// is trimmed away, not counted).
pub const TITLE: &str = concat!(
    "^[",
    blank!(),
    "]*[^",
    blank!(),
    r"](?:[\s\S]{0,198}[^",
    blank!(),
    "])?[",
    blank!(),
    "]*$"
);

/// JSON Schema `pattern` of a text that goes to the OS or git, where a NUL byte
/// cannot (a path, a commit message).
pub const NO_NUL: &str = r"^[^\u0000]*$";

/// The most blocks one message takes.
pub const MAX_BLOCKS: usize = 20;

/// JSON Schema `pattern` of an inline image's media type: what the server reads as
/// one of the image types it takes (the part before any `;`, trimmed, in any case).
const IMAGE_MIME: &str = concat!(
    "^[",
    blank!(),
    "]*[iI][mM][aA][gG][eE]/(?:[pP][nN][gG]|[jJ][pP][eE][gG]|[gG][iI][fF]|[wW][eE][bB][pP])[",
    blank!(),
    r"]*(?:;[\s\S]*)?$"
);

/// JSON Schema `pattern` of non-empty base64 as the server decodes it: the standard
/// alphabet, padded, with the unused bits of the last character zero (RFC 4648
/// canonical), blank edges trimmed.
const BASE64: &str = concat!(
    "^[",
    blank!(),
    "]*(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{4}|[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)[",
    blank!(),
    "]*$"
);

/// `content` of a message: a string (as before blocks existed), or a list of blocks.
/// A plain JSON string stays valid and means one text block.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum MessageContent {
    /// The message's text, not only white space.
    Text(#[schemars(regex(pattern = NOT_BLANK))] String),
    /// Text, images and files, in order: 1 to 20 blocks, at least one of them an
    /// image, a file or a text that is not only white space.
    Blocks(
        #[schemars(
            length(min = 1, max = MAX_BLOCKS),
            extend("contains" = {"anyOf": [
                {"properties": {"type": {"enum": ["image", "file"]}}, "required": ["type"]},
                {"properties": {"text": {"type": "string", "pattern": NOT_BLANK}}, "required": ["text"]}
            ]})
        )]
        Vec<ContentBlock>,
    ),
}

/// One block of a message's content, keyed by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ContentBlock {
    /// `{type: "text", text}`.
    Text(TextBlock),
    /// `{type: "image", mimeType, data}` (base64) or `{type: "image", uploadId}`.
    Image(ImageBlock),
    /// `{type: "file", uploadId}`: a text file is inlined into the prompt; any other
    /// file is saved in the session's working directory and named by its path.
    File(FileBlock),
}

/// `{type: "text", text}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TextBlock {
    /// The text.
    pub text: String,
}

/// An image, inline or uploaded before: `data` with `mimeType`, or `uploadId` alone.
/// (`null` reads as absent, so the schema does not offer it.)
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
// The choice sits in `allOf`, beside the properties rather than around them, so that
// tools which read a schema as a type (the page's JSDoc) still see one object.
#[schemars(extend("allOf" = [{"oneOf": [
    {"required": ["data", "mimeType"], "properties": {"uploadId": false}},
    {"required": ["uploadId"], "properties": {"data": false, "mimeType": false}}
]}]))]
pub struct ImageBlock {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp` (in any case, parameters
    /// after `;` ignored); it must match the bytes' own signature, or the message is
    /// refused with 422 `INVALID_ATTACHMENT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", regex(pattern = IMAGE_MIME))]
    pub mime_type: Option<String>,
    /// The image's bytes, base64 (standard alphabet, padded, not empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", regex(pattern = BASE64))]
    pub data: Option<String>,
    /// An id `POST /api/v1/uploads` answered to this user (one it does not have is
    /// 422 `NO_SUCH_UPLOAD`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub upload_id: Option<UploadId>,
}

/// `{type: "file", uploadId}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileBlock {
    /// An id `POST /api/v1/uploads` answered to this user (one it does not have is
    /// 422 `NO_SUCH_UPLOAD`).
    pub upload_id: UploadId,
}

impl MessageContent {
    /// The message's text: the string, or the text blocks joined by blank lines.
    pub fn text(&self) -> String {
        match self {
            MessageContent::Text(t) => t.clone(),
            MessageContent::Blocks(blocks) => blocks
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n\n"),
        }
    }

    /// True when the content holds anything besides text.
    pub fn has_attachments(&self) -> bool {
        match self {
            MessageContent::Text(_) => false,
            MessageContent::Blocks(b) => b.iter().any(|b| !matches!(b, ContentBlock::Text(_))),
        }
    }
}

impl From<String> for MessageContent {
    fn from(text: String) -> Self {
        MessageContent::Text(text)
    }
}

impl From<&str> for MessageContent {
    fn from(text: &str) -> Self {
        MessageContent::Text(text.to_string())
    }
}

/// Read by hand so that a bad block is named by its index and its own error, rather
/// than serde's "did not match any variant".
impl<'de> Deserialize<'de> for MessageContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match Value::deserialize(d)? {
            Value::String(s) => Ok(MessageContent::Text(s)),
            Value::Array(items) => {
                let mut blocks = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    let kind = item.get("type").and_then(Value::as_str).map(str::to_string);
                    match kind.as_deref() {
                        Some("text" | "image" | "file") => {}
                        Some(other) => {
                            return Err(D::Error::custom(format!(
                                "content block {i}: unknown type `{other}` (text, image, file)"
                            )))
                        }
                        None => {
                            return Err(D::Error::custom(format!(
                            "content block {i}: an object with `type` (text, image, file) expected"
                        )))
                        }
                    }
                    let block = serde_json::from_value::<ContentBlock>(item)
                        .map_err(|e| D::Error::custom(format!("content block {i}: {e}")))?;
                    blocks.push(block);
                }
                Ok(MessageContent::Blocks(blocks))
            }
            _ => Err(D::Error::custom(
                "content must be a string or a list of content blocks",
            )),
        }
    }
}

/// A block of a `user_message` as history keeps it: images and files by upload id,
/// never their bytes, so the event log stays small.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum HistoryBlock {
    /// `{type: "text", text}`.
    Text(TextBlock),
    /// `{type: "image", uploadId, mimeType, size}`; its bytes are at
    /// `GET /api/v1/sessions/{id}/uploads/{uploadId}`.
    Image(StoredAttachment),
    /// `{type: "file", uploadId, mimeType, size, name, path?}`.
    File(StoredAttachment),
}

/// An attachment as history names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoredAttachment {
    /// Its upload id (inline images are stored as uploads too).
    pub upload_id: UploadId,
    /// Its media type.
    pub mime_type: String,
    /// Bytes.
    pub size: u64,
    /// The file name given at upload (`?name=`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A file that was not inlined: where it was saved, relative to the session's
    /// working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_string_stays_a_string() {
        let c: MessageContent = serde_json::from_value(json!("hi")).unwrap();
        assert_eq!(c, MessageContent::Text("hi".into()));
        assert_eq!(serde_json::to_value(&c).unwrap(), json!("hi"));
    }

    #[test]
    fn blocks_parse_and_bad_ones_are_named() {
        let c: MessageContent = serde_json::from_value(json!([
            {"type": "text", "text": "look"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"},
            {"type": "file", "uploadId": "up_1"}
        ]))
        .unwrap();
        assert_eq!(c.text(), "look");
        assert!(c.has_attachments());
        let err = serde_json::from_value::<MessageContent>(json!([{"type": "video"}]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("content block 0: unknown type `video`"),
            "{err}"
        );
        let err = serde_json::from_value::<MessageContent>(json!([{"type": "file"}]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("content block 0") && err.contains("uploadId"),
            "{err}"
        );
        let err = serde_json::from_value::<MessageContent>(json!(
            [{"type": "text", "text": "a", "extra": 1}]
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("extra"), "{err}");
        assert!(serde_json::from_value::<MessageContent>(json!(5)).is_err());
    }
}
