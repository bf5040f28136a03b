//! JSON values that are safe to build, walk and send: bounded in depth,
//! free of numbers JSON cannot carry, and serialized without letting a
//! panic or a recursion escape.

pub(crate) mod depth;
pub(crate) mod millis;
pub(crate) mod pointer;
pub(crate) mod strict;
pub(crate) mod text;
pub(crate) mod unique;
