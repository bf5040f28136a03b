//! Autoref specialization: what the macros ask of a type that may or may not
//! implement a trait, answered at compile time without a bound.
//!
//! `(&Probe::<T>::new()).method()` finds the method on `Probe<T>` itself when
//! `T` implements the trait, and falls back to the one on `&Probe<T>`
//! otherwise.

use std::error::Error as StdError;

/// A schema function, as a definition takes it.
pub type SchemaFn = fn(&mut schemars::SchemaGenerator) -> schemars::Schema;

/// Autoref specialization: the output schema of `T` when it implements `JsonSchema`.
#[derive(Debug)]
pub struct SchemaProbe<T>(std::marker::PhantomData<fn() -> T>);

impl<T> SchemaProbe<T> {
    /// A probe of `T`.
    pub fn new() -> Self {
        SchemaProbe(std::marker::PhantomData)
    }
}

impl<T> Default for SchemaProbe<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Chosen when the probed type implements `JsonSchema`.
pub trait ViaSchema {
    /// Its schema.
    fn output_schema(&self) -> Option<SchemaFn>;
}

impl<T: schemars::JsonSchema> ViaSchema for SchemaProbe<T> {
    fn output_schema(&self) -> Option<SchemaFn> {
        Some(schemars::SchemaGenerator::subschema_for::<T>)
    }
}

/// Chosen otherwise.
pub trait ViaNoSchema {
    /// `None`.
    fn output_schema(&self) -> Option<SchemaFn> {
        None
    }
}

impl<T> ViaNoSchema for &SchemaProbe<T> {}

/// Autoref specialization: the failure modes of `E` when it implements `DescribeFailures`.
#[derive(Debug)]
pub struct FailureProbe<E>(std::marker::PhantomData<fn() -> E>);

impl<E> FailureProbe<E> {
    /// A probe of `E`.
    pub fn new() -> Self {
        FailureProbe(std::marker::PhantomData)
    }
}

impl<E> Default for FailureProbe<E> {
    fn default() -> Self {
        Self::new()
    }
}

/// Chosen when the probed type implements `DescribeFailures`.
pub trait ViaFailures {
    /// Its failure modes.
    fn failure_modes(&self) -> Option<Vec<crate::catalog::FailureMode>>;
}

impl<E: crate::catalog::DescribeFailures> ViaFailures for FailureProbe<E> {
    fn failure_modes(&self) -> Option<Vec<crate::catalog::FailureMode>> {
        Some(E::failure_modes())
    }
}

/// Chosen otherwise.
pub trait ViaNoFailures {
    /// `None`.
    fn failure_modes(&self) -> Option<Vec<crate::catalog::FailureMode>> {
        None
    }
}

impl<E> ViaNoFailures for &FailureProbe<E> {}

/// Autoref specialization: `(&ErrorProbe(value)).as_std_error()` is
/// `Some(value)` when the value's type implements [`std::error::Error`] and
/// `None` otherwise. Used by `#[derive(ToolError)]` to fill in `as_error`.
#[derive(Debug)]
pub struct ErrorProbe<'a, T: ?Sized>(pub &'a T);

/// Chosen when the probed type implements [`std::error::Error`].
pub trait ViaStdError<'a> {
    /// The value as an error.
    fn as_std_error(&self) -> Option<&'a (dyn StdError + 'static)>;
}

impl<'a, T: StdError + 'static> ViaStdError<'a> for ErrorProbe<'a, T> {
    fn as_std_error(&self) -> Option<&'a (dyn StdError + 'static)> {
        Some(self.0)
    }
}

/// Chosen otherwise.
pub trait ViaNothing<'a> {
    /// `None`.
    fn as_std_error(&self) -> Option<&'a (dyn StdError + 'static)>;
}

impl<'a, T: ?Sized> ViaNothing<'a> for &ErrorProbe<'a, T> {
    fn as_std_error(&self) -> Option<&'a (dyn StdError + 'static)> {
        None
    }
}
