#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Metrics (swift-metrics) and tracing (swift-distributed-tracing): see the article
/// "Metrics and tracing" (ActiveRecord.docc).
extension Database {
    /// Whether this database reports to a metrics backend or a tracer: decided when it opened,
    /// and again by ``refreshInstrumentation()``.
    public var isInstrumented: Bool { instrumentation.isReporting }

    /// Looks again at the metrics factory (`MetricsSystem.factory`) and the tracer
    /// (`InstrumentationSystem.tracer`) in effect, and reports to them from now on; with the
    /// no-op ones, reports nothing and costs nothing per statement.
    ///
    /// A database decides this once, when it opens: bootstrap metrics and tracing first. Call
    /// this for a database opened before the bootstrap (or inside a task-local
    /// `withMetricsFactory` / `withTracer`, to use the one in effect now).
    ///
    /// ```swift
    /// let db = try Database(.inMemory)
    /// MetricsSystem.bootstrap(factory)         // after the database opened
    /// db.refreshInstrumentation()              // reports from now on
    /// ```
    public func refreshInstrumentation() {
        let instruments = instrumentation.refresh()
        configureConnections { $0.instruments = instruments }
    }
}
