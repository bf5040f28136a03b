//! Support for the code the macros generate: the call of a `#[tool]`
//! (capture, guard, body, settle), the decoding of a served call's arguments,
//! the state a served call keeps across attempts, and the autoref probes.
//! None of it is API: the generated code reaches it through [`api`], which
//! the crate's root re-exports as the hidden `__private`.
// Not API: the `# Errors` of these functions are the generated code's concern.
#![allow(clippy::missing_errors_doc)]

pub mod api;
pub(crate) mod arguments;
pub(crate) mod call;
pub(crate) mod capture;
pub(crate) mod hints;
pub(crate) mod probe;
pub(crate) mod state;
