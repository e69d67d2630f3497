@_spi(Engines) import ARCore

/// PostgreSQL's dialect, for the package's code that writes PostgreSQL's SQL without a server
/// (the SQL compiler's tests, through ARConformance's `RecordingEngine`).
package let postgreSQLDialect: any SQLDialect = PostgreSQLDialect()
