//! What a user message carries besides its text: [`Attachments`], resolved from its
//! content blocks by the upload store (`uploads::resolve`), kept with a queued message
//! in the session record and handed to the adapter with the turn. A leaf: it imports
//! no other module of the crate, so `record` and `uploads` do not import `adapter`.

/// An image of a turn's user input. Its bytes stay on disk in the upload store; the
/// adapter reads them when it writes the vendor's request.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageInput {
    /// The upload holding the bytes.
    pub upload_id: tandem_protocol::UploadId,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp` (checked against the
    /// bytes when they were stored).
    pub mime_type: String,
    /// Where the bytes are (0600, named by their SHA-256).
    pub path: std::path::PathBuf,
}

impl ImageInput {
    /// The bytes, base64 (standard alphabet, padded), as Claude Code and ACP agents
    /// take them.
    pub fn base64(&self) -> std::io::Result<String> {
        use base64::Engine as _;
        let bytes = std::fs::read(&self.path)?;
        Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
    }
}

/// What a message carries besides its text, resolved from its content blocks:
/// what the vendor gets, and what history keeps. Kept with a queued message.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attachments {
    /// Text the vendor gets after the message's own: inlined text files, and the
    /// paths of files saved in the working directory.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prompt_text: String,
    /// Images, in the message's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageInput>,
    /// The message's blocks as `user_message.content` records them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<tandem_protocol::HistoryBlock>,
}

impl Attachments {
    /// True for a text-only message.
    pub fn is_empty(&self) -> bool {
        self.prompt_text.is_empty() && self.images.is_empty() && self.blocks.is_empty()
    }
}
