//! A fresh PostgreSQL database per test, on the throwaway cluster the test command starts
//! (`scripts/postgres`, whose admin URL `scripts/test` exports as `VWF_TEST_DATABASE_URL`).

use sqlx::Connection;

/// The cluster's admin URL; a clear failure (never a skip) when there is none.
pub fn admin_url() -> String {
    std::env::var("VWF_TEST_DATABASE_URL").ok().filter(|u| !u.trim().is_empty()).unwrap_or_else(|| {
        panic!(
            "VWF_TEST_DATABASE_URL is not set: the PostgreSQL tests need a server. Run them through scripts/test, which \
             starts one, or start one with `scripts/postgres start DIR` and export the URL it prints"
        )
    })
}

/// Creates an empty database and returns its URL.
pub fn fresh_database() -> String {
    let admin = admin_url();
    let mut random = [0u8; 6];
    getrandom::fill(&mut random).expect("random");
    let name = format!("vwf_t_{}", random.iter().map(|b| format!("{b:02x}")).collect::<String>());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let mut conn = sqlx::PgConnection::connect(&admin).await.unwrap_or_else(|e| panic!("cannot reach the test server {admin}: {e}"));
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut conn).await.expect("create database");
    });
    let (base, _) = admin.rsplit_once('/').expect("the admin URL names a database");
    format!("{base}/{name}")
}
