//! Which encoding a model name counts with.
//!
//! A name matches a known entry exactly, or else the longest known entry that is a prefix of it
//! at a word boundary (`gpt-4o-mini-2024-07-18` is `gpt-4o`; `gpt-40` is nothing). Matching
//! ignores ASCII case and a leading provider path such as `openai/`.

use crate::count::{Encoding, UnknownEncoding};

/// Model names (or name prefixes) and the encoding each counts with.
const MODELS: &[(&str, Encoding)] = &[
    ("gpt-5", Encoding::O200kBase),
    ("gpt-4.1", Encoding::O200kBase),
    ("gpt-4.5", Encoding::O200kBase),
    ("gpt-4o", Encoding::O200kBase),
    ("chatgpt-4o", Encoding::O200kBase),
    ("o1", Encoding::O200kBase),
    ("o3", Encoding::O200kBase),
    ("o4", Encoding::O200kBase),
    ("codex-mini", Encoding::O200kBase),
    ("gpt-4", Encoding::Cl100kBase),
    ("gpt-3.5-turbo", Encoding::Cl100kBase),
    ("gpt-35-turbo", Encoding::Cl100kBase),
    ("text-embedding-3", Encoding::Cl100kBase),
    ("text-embedding-ada-002", Encoding::Cl100kBase),
];

/// A model name that matches no known entry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown model {name:?}; known models (and their prefixes): {known}", known = known_models())]
pub struct UnknownModel {
    /// The name that was asked for.
    pub name: String,
}

fn known_models() -> String {
    MODELS
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why an encoding could not be chosen.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// The encoding name is not known.
    #[error(transparent)]
    Encoding(#[from] UnknownEncoding),
    /// The model name is not known.
    #[error(transparent)]
    Model(#[from] UnknownModel),
}

/// The encoding `model` counts with, if the model is known.
///
/// ```
/// use context_keeper::{encoding_for_model, Encoding};
/// assert_eq!(encoding_for_model("gpt-4o-mini"), Some(Encoding::O200kBase));
/// assert_eq!(encoding_for_model("GPT-4-0613"), Some(Encoding::Cl100kBase));
/// assert_eq!(encoding_for_model("gpt-40"), None);
/// ```
pub fn encoding_for_model(model: &str) -> Option<Encoding> {
    let name = model.trim().to_ascii_lowercase();
    let name = name.strip_prefix("openai/").unwrap_or(&name);
    MODELS
        .iter()
        .filter(|(known, _)| {
            name.strip_prefix(known).is_some_and(|rest| {
                rest.chars()
                    .next()
                    .is_none_or(|c| !c.is_ascii_alphanumeric())
            })
        })
        .max_by_key(|(known, _)| known.len())
        .map(|&(_, encoding)| encoding)
}

/// Chooses the encoding for a count: an explicit `encoding` wins over the `model`'s, and with
/// neither the default is o200k_base (the encoding of every current OpenAI model).
pub fn resolve_encoding(
    encoding: Option<&str>,
    model: Option<&str>,
) -> Result<Encoding, ResolveError> {
    if let Some(name) = encoding {
        return Ok(name.parse()?);
    }
    match model {
        Some(name) => encoding_for_model(name).ok_or_else(|| {
            UnknownModel {
                name: name.to_owned(),
            }
            .into()
        }),
        None => Ok(Encoding::O200kBase),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins_at_a_boundary() {
        assert_eq!(
            encoding_for_model("gpt-4.1-nano"),
            Some(Encoding::O200kBase)
        );
        assert_eq!(
            encoding_for_model("gpt-4-turbo"),
            Some(Encoding::Cl100kBase)
        );
        assert_eq!(encoding_for_model("gpt-4"), Some(Encoding::Cl100kBase));
        assert_eq!(
            encoding_for_model("openai/gpt-5-mini"),
            Some(Encoding::O200kBase)
        );
        assert_eq!(encoding_for_model("o3-mini"), Some(Encoding::O200kBase));
        assert_eq!(encoding_for_model("o30"), None);
        assert_eq!(encoding_for_model("claude-3-opus"), None);
        assert_eq!(encoding_for_model(""), None);
    }

    #[test]
    fn explicit_encoding_wins_and_errors_name_the_input() {
        assert_eq!(
            resolve_encoding(Some("cl100k_base"), Some("gpt-4o")),
            Ok(Encoding::Cl100kBase)
        );
        assert_eq!(resolve_encoding(None, None), Ok(Encoding::O200kBase));
        let err = resolve_encoding(Some("p50k"), None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"p50k\"") && err.contains("o200k_base, cl100k_base"),
            "{err}"
        );
        let err = resolve_encoding(None, Some("llama-9"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"llama-9\"") && err.contains("gpt-4o"),
            "{err}"
        );
    }
}
