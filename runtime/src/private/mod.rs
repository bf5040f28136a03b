//! What the code the macros generate names, and nothing else: [`api`]
//! re-exports it from where each piece lives, and the crate's root
//! re-exports `api` as the hidden `__private` (as serde's `private` glue is
//! kept apart from its API).

pub mod api;
