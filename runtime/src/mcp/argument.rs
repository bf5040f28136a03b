//! A parameter of a served tool: what its type must do — decode from the
//! client's JSON, and describe itself with a JSON Schema. The definition
//! reads its schema; the serving side decodes it.
// Support for generated code, reached only through `__private`: the
// `# Errors` of these functions are the generated code's concern.
#![allow(clippy::missing_errors_doc)]

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A parameter type a served tool can take: deserialized from the client's
/// JSON and described by a JSON Schema.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an argument of a served tool: it must implement `serde::Deserialize` and `schemars::JsonSchema`",
    label = "a client cannot send a `{Self}`",
    note = "derive `Deserialize` and `JsonSchema` for it; or, if the tool is only called from Rust, mark it `#[tool(local)]`"
)]
pub trait Arg: Sized {
    /// Decodes the argument; `None` when the client did not send it.
    fn decode(value: Option<&Value>) -> Result<Self, (String, String)>;
    /// The parameter's schema.
    fn schema(generator: &mut SchemaGenerator) -> Schema;
    /// Whether a client must send it: anything but an `Option`.
    fn required() -> bool;
}

#[diagnostic::do_not_recommend]
impl<T: DeserializeOwned + JsonSchema> Arg for T {
    fn decode(value: Option<&Value>) -> Result<T, (String, String)> {
        match value {
            Some(value) => serde_path_to_error::deserialize(value).map_err(|error| {
                let path = error.path().to_string();
                let path = if path == "." { String::new() } else { path };
                (path, error.into_inner().to_string())
            }),
            // Missing is `None` for an `Option`, as serde's derive does it.
            None => T::deserialize(&Value::Null)
                .map_err(|_| (String::new(), "required argument is missing".to_owned())),
        }
    }

    fn schema(generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<T>()
    }

    fn required() -> bool {
        // A `Deserialize` that panics on `null` takes no `null`: required.
        std::panic::catch_unwind(|| T::deserialize(&Value::Null).is_err()).unwrap_or(true)
    }
}
