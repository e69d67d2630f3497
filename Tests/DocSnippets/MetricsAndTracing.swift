// snippet-imports: Metrics Tracing
// What MetricsAndTracing.md's blocks take as given: the program's backends (a real program's
// come from swift-prometheus, swift-otel and the like) and a model.

let metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance
let tracer = NoOpTracer()
final class User: Model {
    @Column var name: String = ""
}
let id: Int64 = 1
let db = try! Database(.inMemory)
