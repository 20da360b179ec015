//! Shortening text for people to read.

/// `text` cut to at most `max` characters, with an ellipsis when cut.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((at, _)) => format!("{}…", &text[..at]),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn clips_on_characters_with_an_ellipsis() {
        assert_eq!(super::clip("héllo", 10), "héllo");
        assert_eq!(super::clip("héllo", 2), "hé…");
    }
}
