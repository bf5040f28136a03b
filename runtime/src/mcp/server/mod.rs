//! Serving tools: a tool set (its registry, its dispatch, how a failed call
//! is shaped to be sent), a served call's arguments decoded and the state
//! it keeps across attempts; and, with the `rmcp` feature, the tool set on
//! rmcp — the live request a tool is handed, asking the client in rounds,
//! asking a person to approve a block, and calls run as tasks.

#[cfg(feature = "rmcp")]
pub(crate) mod approval;
pub(crate) mod arguments;
#[cfg(feature = "rmcp")]
pub(crate) mod asking;
#[cfg(feature = "rmcp")]
pub(crate) mod bounded;
#[cfg(feature = "rmcp")]
mod client;
#[cfg(feature = "rmcp")]
pub(crate) mod digest;
#[cfg(feature = "rmcp")]
pub(crate) mod held;
#[cfg(feature = "inbox")]
pub(crate) mod inbox;
#[cfg(feature = "rmcp")]
pub(crate) mod live;
#[cfg(feature = "rmcp")]
mod redeemed;
#[cfg(feature = "rmcp")]
pub(crate) mod rmcp;
#[cfg(feature = "rmcp")]
pub(crate) mod rounds;
#[cfg(feature = "rmcp")]
pub(crate) mod sealed;
pub(crate) mod state;
#[cfg(feature = "rmcp")]
pub(crate) mod tasks;
#[cfg(feature = "rmcp")]
pub(crate) mod ticket;
pub(crate) mod toolset;
#[cfg(feature = "tokio")]
pub(crate) mod turns;
#[cfg(feature = "inbox")]
pub(crate) mod visible;
#[cfg(feature = "inbox")]
pub(crate) mod webhook;
