// The README is the crate's documentation. Its examples serve and call over
// MCP, so they are tested as doctests with the `rmcp` and `client` features
// (the README's test command, `--all-features`); without them they are
// documentation only.
#![cfg_attr(
    any(all(feature = "rmcp", feature = "client"), not(doctest)),
    doc = include_str!("../README.md")
)]
#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(tool_envelope_docsrs, feature(doc_cfg))]

#[doc(inline)]
pub use tool_envelope_runtime::*;

#[doc(inline)]
pub use tool_envelope_macros::{ToolError, tool, tools};

#[doc(hidden)]
pub use tool_envelope_runtime::__private;
