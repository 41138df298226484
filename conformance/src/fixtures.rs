//! The data the suite's fixtures hand back: media as base64, and the texts the checks look for.
//! Shared by the tools, the prompts and the resources, so each fixture is written once.

/// A 1×1 PNG, base64-encoded: the image of `test_image_content`, `test_prompt_with_image` and
/// `test://static-binary`.
pub(crate) const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg==";

/// An empty WAV file, base64-encoded: the sound of `test_audio_content`.
pub(crate) const WAV_BASE64: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA=";

/// The text of `test://static-text`.
pub(crate) const STATIC_TEXT: &str = "This is the content of the static text resource.";
