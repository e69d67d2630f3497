// The harness: options, the counted and timed runs, the report's verdict.
import Foundation

struct Options {
    var shape = Shape()
    var rounds = 5
    var workloads = Workload.allCases
    /// The counted runs of PostgresNIO and Fluent do ops / divisor operations (at least 1/10 of
    /// the table's worth), to keep callgrind's time on them within minutes; per-unit figures do
    /// not depend on it.
    var peerOpsDivisor = 1
    var count = true
    var wall = true
    var markdown: String?
    var child: (side: String, workload: Workload, ops: Int)?

    init(_ arguments: [String]) throws {
        var rest = Array(arguments.dropFirst())
        if rest.first == "child" {
            guard rest.count >= 4, let workload = Workload(rawValue: rest[2]), let ops = Int(rest[3]) else {
                throw PeerError("usage: PeerBench child SIDE WORKLOAD OPS [--rows N] [--groups G]")
            }
            child = (rest[1], workload, ops)
            rest.removeFirst(4)
        }
        var iterator = rest.makeIterator()
        while let flag = iterator.next() {
            func value() throws -> String {
                guard let value = iterator.next() else { throw PeerError("\(flag) needs a value") }
                return value
            }
            func number() throws -> Int {
                let text = try value()
                guard let number = Int(text), number > 0 else { throw PeerError("\(flag) needs a positive number, not \(text)") }
                return number
            }
            switch flag {
            case "--rows": shape.rows = try number()
            case "--groups": shape.groups = try number()
            case "--rounds": rounds = try number()
            case "--peer-ops-divisor": peerOpsDivisor = try number()
            case "--workloads":
                workloads = try value().split(separator: ",").map {
                    guard let workload = Workload(rawValue: String($0)) else {
                        throw PeerError("unknown workload \($0); known: \(Workload.allCases.map(\.rawValue).joined(separator: ","))")
                    }
                    return workload
                }
            case "--no-count": count = false
            case "--no-wall": wall = false
            case "--markdown": markdown = try value()
            default: throw PeerError("unknown option \(flag)")
            }
        }
        guard shape.rows % shape.groups == 0 else {
            throw PeerError("--rows (\(shape.rows)) must be a multiple of --groups (\(shape.groups)): every group gets as many rows")
        }
    }
}

/// The four sides, in the report's order.
var sideTypes: [any PeerSide.Type] { [LibPQSide.self, LibrarySide.self, NIOSide.self, FluentSide.self] }

func sideType(_ name: String) throws -> any PeerSide.Type {
    switch name {
    case LibPQSide.name: return LibPQSide.self
    case LibrarySide.name: return LibrarySide.self
    case NIOSide.name: return NIOSide.self
    case FluentSide.name: return FluentSide.self
    default: throw PeerError("unknown side \(name); known: libpq, library, nio, fluent")
    }
}

/// A counted run: connect, set up, the operations (none when `ops` is 0), the digest, close.
func runChild(_ server: Server, _ options: Options, side: String, workload: Workload, ops: Int) async throws {
    let peer = try await sideType(side).init(server: server, shape: options.shape)
    try await peer.prepare(workload)
    if ops > 0 { try await peer.run(workload, ops: ops) }
    print("digest \(peer.digest)")
    try await peer.close()
    // Kept until the process exits: freeing what the run read is no part of the operations.
    keep(peer)
}

/// What a counted run read, kept until the process exits.
nonisolated(unsafe) private var kept: [AnyObject] = []

@inline(never)
private func keep(_ object: AnyObject) { kept.append(object) }

/// The operations a side runs for a workload: the workload's default, divided for the counted
/// runs of the two peers.
func operations(_ workload: Workload, side: String, options: Options, counted: Bool) -> Int {
    let ops = workload.defaultOps(rows: options.shape.rows, groups: options.shape.groups)
    guard counted, side == NIOSide.name || side == FluentSide.name, options.peerOpsDivisor > 1 else { return ops }
    return max(1, ops / options.peerOpsDivisor)
}

/// One timed round of a side: fresh tables, connect and set up (untimed), the operations
/// (timed), every value read and the table checked; microseconds per counted unit.
func timedRound(_ type: any PeerSide.Type, _ workload: Workload, ops: Int, tables: Tables, server: Server) async throws -> Double {
    try await tables.reset(for: workload)
    let peer = try await type.init(server: server, shape: tables.shape)
    try await peer.prepare(workload)
    let clock = ContinuousClock()
    let start = clock.now
    try await peer.run(workload, ops: ops)
    let elapsed = clock.now - start
    try tables.check(peer.snapshots, of: workload, ops: ops, side: type.name)
    try await peer.close()
    try await tables.check(after: workload, ops: ops, side: type.name)
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return seconds * 1e6 / Double(ops * workload.units(rows: tables.shape.rows, groups: tables.shape.groups))
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func runBenchmark() async throws -> Int32 {
    let options = try Options(CommandLine.arguments)
    guard let conninfo = ProcessInfo.processInfo.environment["AR_TEST_POSTGRES"], !conninfo.isEmpty else {
        throw PeerError("no server: set AR_TEST_POSTGRES to a libpq connection string (scripts/with-postgres.sh does)")
    }
    let server = Server(conninfo: conninfo)
    if let child = options.child {
        try await runChild(server, options, side: child.side, workload: child.workload, ops: child.ops)
        return 0
    }
    let tables = Tables(server: server, shape: options.shape)
    let admin = try LibPQConnection(conninfo)
    let version = try admin.text("SHOW server_version")
    var report = Report(shape: options.shape, rounds: options.rounds, serverVersion: version)

    if options.count {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("peerbench.\(getpid())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let counting = Counting(server: server, shape: options.shape, tables: tables, directory: directory)
        for workload in options.workloads {
            for type in sideTypes {
                let ops = operations(workload, side: type.name, options: options, counted: true)
                let clock = ContinuousClock(), start = clock.now
                let perUnit = try await counting.perUnit(type.name, workload, ops: ops)
                report.instructions[workload, default: [:]][type.name] = perUnit
                report.countedOps[workload, default: [:]][type.name] = ops
                log("counted \(workload.title) \(type.name): \(ops) ops, \(Int(perUnit.rounded())) instructions per unit "
                    + "(\(String(format: "%.0f", (clock.now - start) / .seconds(1)))s under callgrind)")
            }
        }
    }
    if options.wall {
        for workload in options.workloads {
            var times: [String: [Double]] = [:]
            for round in 0..<options.rounds {
                // Rotate which side goes first.
                for index in 0..<sideTypes.count {
                    let type = sideTypes[(index + round) % sideTypes.count]
                    let ops = operations(workload, side: type.name, options: options, counted: false)
                    times[type.name, default: []].append(
                        try await timedRound(type, workload, ops: ops, tables: tables, server: server))
                }
            }
            report.wall[workload] = times.mapValues(median)
            log("timed \(workload.title): " + sideTypes.map { "\($0.name) \(String(format: "%.2f", report.wall[workload]?[$0.name] ?? 0)) µs" }.joined(separator: ", "))
        }
    }
    let lines = report.lines(options.workloads)
    print(lines.joined(separator: "\n"))
    if let path = options.markdown {
        try (report.markdown(options.workloads).joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }
    return report.behind(options.workloads).isEmpty ? 0 : 1
}

func log(_ line: String) {
    FileHandle.standardError.write(Data("PeerBench: \(line)\n".utf8))
}
