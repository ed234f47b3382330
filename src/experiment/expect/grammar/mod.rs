//! The expectation language: a lexer, a recursive-descent parser over its
//! tokens, and errors that say what was expected, where, and which word was
//! probably meant. Each file imports only the ones listed before it:
//!
//! * `error` — the parse error and the closest-word suggestion.
//! * `lex` — tokens with columns.
//! * `cursor` — the cursor over tokens and its error helpers.
//! * `terms` — the phrases sentences share: windows, bounds and values, a
//!   pool's server, an anchor.
//! * `breaker`, `route`, `pool` — the sentences about one breaker, about a
//!   route's figures and the calls to a dependency, about a pool and its
//!   servers.
//! * `query` — the sentence about a named PromQL query.
//! * `parse` — the entry point: the first word picks the sentence.

pub(crate) mod breaker;
pub(crate) mod cursor;
pub(crate) mod error;
pub(crate) mod lex;
pub(crate) mod parse;
pub(crate) mod pool;
pub(crate) mod query;
pub(crate) mod regress;
pub(crate) mod route;
pub(crate) mod terms;

pub use error::ParseError;
pub(crate) use error::closest;
pub use parse::parse;
