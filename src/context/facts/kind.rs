//! What a fact is, and the bounds every scanner keeps to.

use serde::Serialize;

/// The most facts [`super::extract_facts`] returns, so a huge span stays linear in time and bounded in
/// memory.
pub const MAX_FACTS: usize = 2_000;
/// The longest fact, in bytes: a longer command or URL is cut (at a character boundary), a
/// longer path or identifier is not a fact (likely a blob).
pub const MAX_FACT_LEN: usize = 200;
/// What a fact is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub enum FactKind {
    /// A file path (`src/context/mod.rs`, `/etc/hosts`, `C:\x\y.txt`, `pkg/foo.js:120`).
    Path,
    /// An `http(s)`, `ws(s)` or `file` URL.
    Url,
    /// A code identifier (`snake_case`, `camelCase`, `Foo::bar`, `obj.method()`), a hash, a
    /// UUID, a call id, an issue reference (`#1234`) or a version (`v1.2.3`).
    Identifier,
    /// A number with a unit (`20,000 tokens`, `128 KiB`, `2.5 ms`, `95%`).
    Number,
    /// A shell command (in backticks, a shell code block, or a shell tool's `command` input).
    Command,
}

impl FactKind {
    /// The order [`super::missing_facts`] keeps facts in when it has to choose.
    pub const fn priority(self) -> u8 {
        match self {
            FactKind::Path => 0,
            FactKind::Identifier => 1,
            FactKind::Command => 2,
            FactKind::Url => 3,
            FactKind::Number => 4,
        }
    }
}
