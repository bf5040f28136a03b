//! Opening a store from its URL.

use std::sync::Arc;

#[cfg(feature = "postgres")]
use super::PostgresStore;
#[cfg(feature = "sqlite")]
use super::SqliteStore;
use super::{MemoryStore, Store, StoreError};

/// Opens the store at `url`: `memory:` (in the process), `sqlite:PATH`
/// (feature `sqlite`; the file is made if missing), `postgres://…` or
/// `postgresql://…` (feature `postgres`). The SQL backends run their
/// migrations.
///
/// # Errors
///
/// A URL of no backend this build has, or a store that cannot be reached
/// or migrated.
pub async fn open(url: &str) -> Result<Arc<dyn Store>, StoreError> {
    if url == "memory:" || url == "memory" {
        return Ok(Arc::new(MemoryStore::new()));
    }
    if let Some(path) = url.strip_prefix("sqlite:") {
        #[cfg(feature = "sqlite")]
        return Ok(Arc::new(SqliteStore::open(path).await?));
        #[cfg(not(feature = "sqlite"))]
        return Err(StoreError::new(format!(
            "`sqlite:{path}` needs the `sqlite` feature"
        )));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        #[cfg(feature = "postgres")]
        return Ok(Arc::new(PostgresStore::open(url).await?));
        #[cfg(not(feature = "postgres"))]
        return Err(StoreError::new(
            "a `postgres://` store needs the `postgres` feature",
        ));
    }
    Err(StoreError::new(
        "a store URL is `memory:`, `sqlite:PATH` or `postgres://…`",
    ))
}
