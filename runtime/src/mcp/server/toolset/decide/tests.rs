//! A store's failure, as an approver's decision reports it.

use super::*;

#[test]
fn a_store_failure_says_so_once_with_the_database_code() {
    let error = DecisionError::from(
        StoreError::new("canceling statement due to lock timeout").with_code("55P03"),
    );
    assert_eq!(
        error.to_string(),
        "the store failed: canceling statement due to lock timeout (code 55P03)"
    );
}
