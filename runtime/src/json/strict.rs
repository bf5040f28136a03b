//! Serializing what a tool hands over — its arguments, its result, its
//! partial results — so that nothing in it can crash the process or be
//! silently misread.
//!
//! `serde_json` turns a NaN or an infinity into `null`, recurses as deep as
//! the value goes (a value nested ten thousand levels deep overflows the
//! stack), and lets a panicking `Serialize` unwind into the caller. Here,
//! each of those is a [`Problem`]: the value is refused, and the caller
//! decides what stands in for it.

use std::cell::Cell;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};

use serde::Serialize;
use serde::ser::{self, Serializer};
use serde_json::Value;

use crate::json::depth::MAX_DEPTH;
use crate::panic::panic_message;

/// The most nested serializer calls — containers, `Some`, newtypes — a value
/// may make: a bound on the stack, whatever the type.
const MAX_NESTING: usize = 4 * MAX_DEPTH;

mod problem;

pub(crate) use problem::Problem;

/// Writes `value` as compact JSON to `out`. On a problem, `out` holds
/// whatever was written before it; truncate it.
pub(crate) fn to_writer<T: Serialize + ?Sized, W: std::io::Write>(
    value: &T,
    out: &mut W,
) -> Result<(), Problem> {
    run(&mut |state| {
        value
            .serialize(Strict {
                inner: &mut serde_json::Serializer::new(&mut *out),
                state,
            })
            .map_err(|error| error.to_string())
    })
}

/// `value` as a JSON value.
pub(crate) fn to_value<T: Serialize + ?Sized>(value: &T) -> Result<Value, Problem> {
    let mut result = Value::Null;
    run(&mut |state| {
        result = value
            .serialize(Strict {
                inner: serde_json::value::Serializer,
                state,
            })
            .map_err(|error| error.to_string())?;
        Ok(())
    })?;
    Ok(result)
}

/// Runs one serialization with fresh limits, its panics caught. A trait
/// object, so that the unwinding machinery is compiled once.
fn run(serialize: &mut dyn FnMut(State<'_>) -> Result<(), String>) -> Result<(), Problem> {
    let problem = Cell::new(None);
    let state = State {
        depth: 0,
        nesting: 0,
        problem: &problem,
    };
    match catch_unwind(AssertUnwindSafe(|| serialize(state))) {
        // A number JSON cannot carry was written `null`, and the rest
        // serialized: a `Secret` after it notes itself all the same.
        Ok(Ok(())) => problem.take().map_or(Ok(()), Err),
        Ok(Err(error)) => Err(problem.take().unwrap_or(Problem::Failed(error))),
        Err(panic) => Err(Problem::Panicked(panic_message(panic.as_ref()).to_owned())),
    }
}

/// The name `serde_json` serializes a `RawValue` under (its `raw_value`
/// feature, which a dependency may turn on).
const RAW_VALUE: &str = "$serde_json::private::RawValue";

/// How deep the serialization is, and where the first problem is recorded.
#[derive(Clone, Copy)]
struct State<'p> {
    depth: usize,
    nesting: usize,
    problem: &'p Cell<Option<Problem>>,
}

impl State<'_> {
    fn fail<E: ser::Error>(self, problem: Problem) -> E {
        let error = E::custom(&problem);
        self.problem.set(Some(problem));
        error
    }

    /// Records `problem`, unless one was, and goes on: the value is refused
    /// once the serialization ends, every part of it serialized.
    fn flag(self, problem: Problem) {
        if let Some(first) = self.problem.take() {
            self.problem.set(Some(first));
        } else {
            self.problem.set(Some(problem));
        }
    }

    /// One level further in; `container` when it is a JSON array or object.
    fn nest<E: ser::Error>(self, container: bool) -> Result<Self, E> {
        let depth = self.depth + usize::from(container);
        let nesting = self.nesting + 1;
        if depth > MAX_DEPTH || nesting > MAX_NESTING {
            return Err(self.fail(Problem::TooDeep));
        }
        Ok(State {
            depth,
            nesting,
            ..self
        })
    }
}

/// A serializer, or one of its compound serializers, held to the limits.
struct Strict<'p, S> {
    inner: S,
    state: State<'p>,
}

/// A value to serialize inside a compound, held to the same limits.
struct Inner<'a, 'p, T: ?Sized> {
    value: &'a T,
    state: State<'p>,
}

impl<T: Serialize + ?Sized> Serialize for Inner<'_, '_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(Strict {
            inner: serializer,
            state: self.state,
        })
    }
}

macro_rules! forward {
    ($($method:ident($ty:ty);)*) => {$(
        fn $method(self, value: $ty) -> Result<S::Ok, S::Error> {
            self.inner.$method(value)
        }
    )*};
}

impl<'p, S: Serializer> Serializer for Strict<'p, S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Strict<'p, S::SerializeSeq>;
    type SerializeTuple = Strict<'p, S::SerializeTuple>;
    type SerializeTupleStruct = Strict<'p, S::SerializeTupleStruct>;
    type SerializeTupleVariant = Strict<'p, S::SerializeTupleVariant>;
    type SerializeMap = Strict<'p, S::SerializeMap>;
    type SerializeStruct = Strict<'p, S::SerializeStruct>;
    type SerializeStructVariant = Strict<'p, S::SerializeStructVariant>;

    forward! {
        serialize_bool(bool);
        serialize_i8(i8);
        serialize_i16(i16);
        serialize_i32(i32);
        serialize_i64(i64);
        serialize_u8(u8);
        serialize_u16(u16);
        serialize_u32(u32);
        serialize_u64(u64);
        serialize_char(char);
        serialize_str(&str);
        serialize_bytes(&[u8]);
        serialize_unit_struct(&'static str);
    }

    fn serialize_i128(self, value: i128) -> Result<S::Ok, S::Error> {
        if let Ok(value) = i64::try_from(value) {
            return self.inner.serialize_i64(value);
        }
        match u64::try_from(value) {
            Ok(value) => self.inner.serialize_u64(value),
            Err(_) => {
                self.state.flag(Problem::OutOfRange);
                self.inner.serialize_unit()
            }
        }
    }

    fn serialize_u128(self, value: u128) -> Result<S::Ok, S::Error> {
        match u64::try_from(value) {
            Ok(value) => self.inner.serialize_u64(value),
            Err(_) => {
                self.state.flag(Problem::OutOfRange);
                self.inner.serialize_unit()
            }
        }
    }

    fn serialize_f32(self, value: f32) -> Result<S::Ok, S::Error> {
        if !value.is_finite() {
            self.state.flag(Problem::NonFinite);
            return self.inner.serialize_unit();
        }
        self.inner.serialize_f32(value)
    }

    fn serialize_f64(self, value: f64) -> Result<S::Ok, S::Error> {
        if !value.is_finite() {
            self.state.flag(Problem::NonFinite);
            return self.inner.serialize_unit();
        }
        self.inner.serialize_f64(value)
    }

    fn serialize_none(self) -> Result<S::Ok, S::Error> {
        self.inner.serialize_none()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<S::Ok, S::Error> {
        let state = self.state.nest(false)?;
        self.inner.serialize_some(&Inner { value, state })
    }

    fn serialize_unit(self) -> Result<S::Ok, S::Error> {
        self.inner.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
    ) -> Result<S::Ok, S::Error> {
        self.inner.serialize_unit_variant(name, index, variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        let state = self.state.nest(false)?;
        self.inner
            .serialize_newtype_struct(name, &Inner { value, state })
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        let state = self.state.nest(true)?;
        self.inner
            .serialize_newtype_variant(name, index, variant, &Inner { value, state })
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        let state = self.state.nest(true)?;
        Ok(Strict {
            inner: self.inner.serialize_seq(len)?,
            state,
        })
    }

    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, S::Error> {
        let state = self.state.nest(true)?;
        Ok(Strict {
            inner: self.inner.serialize_tuple(len)?,
            state,
        })
    }

    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, S::Error> {
        let state = self.state.nest(true)?;
        Ok(Strict {
            inner: self.inner.serialize_tuple_struct(name, len)?,
            state,
        })
    }

    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        // `{"Variant": [...]}`: two levels.
        let state = self.state.nest::<S::Error>(true)?.nest(true)?;
        Ok(Strict {
            inner: self
                .inner
                .serialize_tuple_variant(name, index, variant, len)?,
            state,
        })
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        let state = self.state.nest(true)?;
        Ok(Strict {
            inner: self.inner.serialize_map(len)?,
            state,
        })
    }

    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, S::Error> {
        // serde_json writes a `RawValue`'s text as it is, unread.
        if name == RAW_VALUE {
            return Err(self.state.fail(Problem::Raw));
        }
        let state = self.state.nest(true)?;
        Ok(Strict {
            inner: self.inner.serialize_struct(name, len)?,
            state,
        })
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        let state = self.state.nest::<S::Error>(true)?.nest(true)?;
        Ok(Strict {
            inner: self
                .inner
                .serialize_struct_variant(name, index, variant, len)?,
            state,
        })
    }

    fn collect_str<T: fmt::Display + ?Sized>(self, value: &T) -> Result<S::Ok, S::Error> {
        self.inner.collect_str(value)
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

impl<S: ser::SerializeSeq> ser::SerializeSeq for Strict<'_, S> {
    type Ok = S::Ok;
    type Error = S::Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), S::Error> {
        let state = self.state;
        self.inner.serialize_element(&Inner { value, state })
    }

    fn end(self) -> Result<S::Ok, S::Error> {
        self.inner.end()
    }
}

impl<S: ser::SerializeTuple> ser::SerializeTuple for Strict<'_, S> {
    type Ok = S::Ok;
    type Error = S::Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), S::Error> {
        let state = self.state;
        self.inner.serialize_element(&Inner { value, state })
    }

    fn end(self) -> Result<S::Ok, S::Error> {
        self.inner.end()
    }
}

impl<S: ser::SerializeTupleStruct> ser::SerializeTupleStruct for Strict<'_, S> {
    type Ok = S::Ok;
    type Error = S::Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), S::Error> {
        let state = self.state;
        self.inner.serialize_field(&Inner { value, state })
    }

    fn end(self) -> Result<S::Ok, S::Error> {
        self.inner.end()
    }
}

impl<S: ser::SerializeTupleVariant> ser::SerializeTupleVariant for Strict<'_, S> {
    type Ok = S::Ok;
    type Error = S::Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), S::Error> {
        let state = self.state;
        self.inner.serialize_field(&Inner { value, state })
    }

    fn end(self) -> Result<S::Ok, S::Error> {
        self.inner.end()
    }
}

impl<S: ser::SerializeMap> ser::SerializeMap for Strict<'_, S> {
    type Ok = S::Ok;
    type Error = S::Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), S::Error> {
        let state = self.state;
        self.inner.serialize_key(&Inner { value: key, state })
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), S::Error> {
        let state = self.state;
        self.inner.serialize_value(&Inner { value, state })
    }

    fn end(self) -> Result<S::Ok, S::Error> {
        self.inner.end()
    }
}

impl<S: ser::SerializeStruct> ser::SerializeStruct for Strict<'_, S> {
    type Ok = S::Ok;
    type Error = S::Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), S::Error> {
        let state = self.state;
        self.inner.serialize_field(key, &Inner { value, state })
    }

    fn skip_field(&mut self, key: &'static str) -> Result<(), S::Error> {
        self.inner.skip_field(key)
    }

    fn end(self) -> Result<S::Ok, S::Error> {
        self.inner.end()
    }
}

impl<S: ser::SerializeStructVariant> ser::SerializeStructVariant for Strict<'_, S> {
    type Ok = S::Ok;
    type Error = S::Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), S::Error> {
        let state = self.state;
        self.inner.serialize_field(key, &Inner { value, state })
    }

    fn skip_field(&mut self, key: &'static str) -> Result<(), S::Error> {
        self.inner.skip_field(key)
    }

    fn end(self) -> Result<S::Ok, S::Error> {
        self.inner.end()
    }
}

#[cfg(test)]
mod tests;
