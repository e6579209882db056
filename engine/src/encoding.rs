//! The encodings this crate counts with, and the errors counting reports: a leaf module that
//! imports neither the engine ([`crate::bpe`]) nor the conversation counter
//! (context-keeper's `counting`), so both can name them without importing each other.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A byte-pair encoding whose counts this crate computes exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Encoding {
    /// GPT-4o, GPT-4.1, GPT-5 and the o-series.
    #[serde(rename = "o200k_base")]
    O200kBase,
    /// GPT-4, GPT-3.5-turbo and text-embedding-3.
    #[serde(rename = "cl100k_base")]
    Cl100kBase,
}

impl Encoding {
    /// Every encoding, in the order error messages list them.
    pub const ALL: [Encoding; 2] = [Encoding::O200kBase, Encoding::Cl100kBase];

    /// The name tiktoken uses for this encoding.
    pub const fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }

    /// The Cargo feature that builds this encoding's tables in; also the name of the npm
    /// package's entry that has only this encoding (`context-keeper/o200k`).
    pub const fn feature(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k",
            Encoding::Cl100kBase => "cl100k",
        }
    }

    /// Whether this build has the encoding's tables (its Cargo feature was on).
    pub const fn is_built(self) -> bool {
        match self {
            Encoding::O200kBase => cfg!(feature = "o200k"),
            Encoding::Cl100kBase => cfg!(feature = "cl100k"),
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An encoding name this crate does not know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown encoding {name:?}; known encodings: {known}", known = known_encodings())]
pub struct UnknownEncoding {
    /// The name that was asked for.
    pub name: String,
}

fn known_encodings() -> String {
    Encoding::ALL.map(Encoding::name).join(", ")
}

impl FromStr for Encoding {
    type Err = UnknownEncoding;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Encoding::ALL
            .into_iter()
            .find(|e| e.name() == name)
            .ok_or_else(|| UnknownEncoding {
                name: name.to_owned(),
            })
    }
}

/// Counting failed for a reason other than the input.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CountError {
    /// This build left the encoding's tables out, to be smaller: the npm entries
    /// `context-keeper/o200k` and `context-keeper/cl100k` have one encoding each (Cargo
    /// features `o200k`, `cl100k`).
    #[error(
        "{encoding} is not in this build of context-keeper; count it with an entry that has it: \
         \"context-keeper\" (every encoding) or \"context-keeper/{feature}\" (Cargo feature \
         \"{feature}\")",
        feature = encoding.feature()
    )]
    NotBuilt {
        /// The encoding asked for.
        encoding: Encoding,
    },
    /// The encoding's tables could not be built: they are corrupt. A defect of the build, not
    /// of the input; it is reported instead of panicking because a panic poisons a wasm
    /// instance.
    #[error("the {encoding} tables failed to load: {reason}")]
    TablesUnavailable {
        /// The encoding whose tables failed.
        encoding: Encoding,
        /// What went wrong.
        reason: String,
    },
}
