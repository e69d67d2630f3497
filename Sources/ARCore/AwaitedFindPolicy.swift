import Synchronization

/// Where an awaited find by primary key (a model's `find(_:on:)`) runs: at once on the
/// calling thread, or on one of the database's own threads while the caller's task is
/// suspended (see ``Database/awaitedFinds``).
///
/// Handing a find to another thread and back costs a wake-up of a thread of Swift
/// concurrency's cooperative pool: 10–14 µs on a small machine, more than a SQLite find and a
/// third of a PostgreSQL find on the same machine. Running it on the calling thread costs what
/// a synchronous find does, but that thread (one of the pool's, one per core) waits for it.
/// A find runs on the calling thread only with a connection idle at that moment (taken
/// without waiting, never opened for it), no replicas, and the model's table already checked
/// by automatic migration; every other awaited call runs on the database's threads.
public enum AwaitedFindPolicy: Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The default. SQLite: on the calling thread whenever a reader is idle (one indexed
    /// look-up; nothing waits on a network). PostgreSQL: on the calling thread only while it
    /// is cheap and bounded — one such find at a time per database (others go to the
    /// database's threads), while the server's recent finds took under
    /// 75 µs on average (measured on every awaited find; until the first
    /// ones have, on the database's threads), and not within a second of a find that took longer
    /// than 10 ms. At most one cooperative thread is blocked by the
    /// database's finds at any time, and only while its server answers quickly.
    case automatic
    /// On the calling thread whenever a connection (a reader on SQLite) is idle, however many
    /// finds already run so and however slow the server is: the lowest cost per find, for a
    /// process whose tasks are mostly database calls to a near, fast server. On PostgreSQL a
    /// cooperative thread waits for each such find's round trip, as long as a stalled server
    /// takes (bounded by ``Database/statementTimeout`` when set).
    case onCallingThread
    /// Always on one of the database's own threads, on either engine, as every other awaited
    /// call: the caller's thread never waits for the database, at the cost of a thread hand-over
    /// per find (measured +10 to +50 µs on a 2-core machine).
    case onExecutor

    /// The case's name as written in Swift (`automatic`, `onCallingThread`, `onExecutor`).
    public var description: String {
        switch self {
        case .automatic: "automatic"
        case .onCallingThread: "onCallingThread"
        case .onExecutor: "onExecutor"
        }
    }

    /// The policy as stored in an atomic.
    var code: UInt8 {
        switch self {
        case .automatic: AwaitedFindGate.automatic
        case .onCallingThread: AwaitedFindGate.onCallingThread
        case .onExecutor: AwaitedFindGate.onExecutor
        }
    }

    init(code: UInt8) {
        switch code {
        case AwaitedFindGate.onCallingThread: self = .onCallingThread
        case AwaitedFindGate.onExecutor: self = .onExecutor
        default: self = .automatic
        }
    }
}

/// What ``AwaitedFindPolicy/automatic`` decides by on a pooled engine (PostgreSQL): a
/// recent estimate of a find's round trip, the time until which finds on the calling thread
/// are off after a stall, and the one slot for a find on the calling thread. Every field is an
/// atomic read or written without waiting; races between threads lose an update of the
/// estimate at worst.
package final class AwaitedFindGate: Sendable {
    static let automatic: UInt8 = 0
    static let onCallingThread: UInt8 = 1
    static let onExecutor: UInt8 = 2

    /// Below this estimate of a find's round trip a find may run on the calling thread: 75 µs.
    /// A find answered by a server on the same machine took 15–48 µs here (a synchronous find
    /// in a release build, the library's work included, medians at load averages of 4–10 on 2
    /// cores); one across a network takes 100–500 µs, which keeps it on the database's threads.
    /// (50 µs lost the find at once at a load average of 10 here; 100 µs is the edge of a
    /// LAN.) A server busy enough that its finds take over 75 µs gets them on the database's
    /// threads too, where waiting blocks no thread of the pool.
    package static let defaultRoundTripLimit: UInt64 = 75_000
    /// A find on the calling thread that takes longer than this is a stall: 10 ms. Not less:
    /// on this 2-core machine at a load average of 8 (other processes' builds), 0.47% of
    /// finds to a server on the same machine took over 1 ms, 0.34% over 2 ms and 0.014% over
    /// 5 ms (the client or the server's process waiting for a core, not the server stalling),
    /// none of 139,000 over 10 ms; a limit of 1–5 ms turned finds on the calling thread off
    /// nearly all the time there.
    package static let defaultStallLimit: UInt64 = 10_000_000
    /// The most one find adds to the estimate, as if it took 1 ms: from any estimate under
    /// the round-trip limit, one such find puts it over (by at least 1/8 of 900 µs), and about
    /// 20 finds at a near server's speed bring it back (a connection's first find, preparing
    /// its statement, or a find that waited for a core costs a few finds on the executor, not
    /// more).
    package static let sampleCeiling: UInt64 = 1_000_000
    /// How long finds stay off the calling thread after a stall: 1 s.
    package static let defaultStallBackOff: UInt64 = 1_000_000_000

    /// The policy (see ``AwaitedFindPolicy/code``).
    let policy = Atomic<UInt8>(automatic)
    /// The exponentially weighted round trip of the last finds, in nanoseconds (each new one
    /// weighs 1/8); 0: none measured yet.
    let roundTrip = Atomic<UInt64>(0)
    /// The monotonic time (nanoseconds) until which no find runs on the calling thread, after
    /// a stall; 0: none.
    let stalledUntil = Atomic<UInt64>(0)
    /// Whether a find runs on a calling thread now (at most one does, under `.automatic`).
    let inlineSlot = Atomic<Bool>(false)
    /// The limits, in nanoseconds (settable for tests and tuning).
    let roundTripLimit = Atomic<UInt64>(defaultRoundTripLimit)
    let stallLimit = Atomic<UInt64>(defaultStallLimit)
    let stallBackOff = Atomic<UInt64>(defaultStallBackOff)

    init() {}

    /// Whether a find may run on the calling thread now: the estimate is under its limit, the
    /// slot was free (it is taken: give it back with ``finishInline(startedAt:)`` or
    /// ``releaseSlot()``) and no stall's back-off runs. Returns the time it started, else `nil`.
    @inline(__always)
    func admitInline() -> UInt64? {
        let estimate = roundTrip.load(ordering: .relaxed)
        guard estimate != 0, estimate <= roundTripLimit.load(ordering: .relaxed),
              inlineSlot.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else { return nil }
        let now = monotonicNanoseconds()
        guard now >= stalledUntil.load(ordering: .relaxed) else {
            releaseSlot()
            return nil
        }
        return now
    }

    /// Gives the slot back without a measurement (no idle connection after all).
    @inline(__always)
    func releaseSlot() {
        inlineSlot.store(false, ordering: .releasing)
    }

    /// Ends a find on the calling thread that started at `started`: its round trip measured
    /// (one longer than the stall limit turns finds on the calling thread off for the
    /// back-off), the slot given back.
    @inline(__always)
    func finishInline(startedAt started: UInt64) {
        let now = monotonicNanoseconds()
        let sample = now &- started
        record(sample)
        if sample > stallLimit.load(ordering: .relaxed) {
            stalledUntil.store(now &+ stallBackOff.load(ordering: .relaxed), ordering: .relaxed)
        }
        releaseSlot()
    }

    /// Ends a find on the database's thread that started at `started`: its round trip measured.
    @inline(__always)
    func finishOnExecutor(startedAt started: UInt64) {
        record(monotonicNanoseconds() &- started)
    }

    /// Takes a find's round trip into the estimate, at most ``sampleCeiling`` of it.
    private func record(_ sample: UInt64) {
        let sample = max(min(sample, Self.sampleCeiling), 1)
        let old = roundTrip.load(ordering: .relaxed)
        roundTrip.store(old == 0 ? sample : old - old / 8 + sample / 8, ordering: .relaxed)
    }
}

extension Database {
    /// Where an awaited `find(_:on:)` runs: ``AwaitedFindPolicy/automatic`` by default (see
    /// each case).
    ///
    /// ```swift
    /// let db = try Database(.postgres(url))
    /// db.awaitedFinds = .onExecutor        // this process's cooperative threads never wait for a find
    /// ```
    ///
    /// `.automatic` runs a PostgreSQL find on the calling thread only one at a time per database,
    /// while the server's finds take under 75 µs on average (an exponentially weighted average
    /// of the database's recent awaited finds, wherever they ran, each new one weighing 1/8), and
    /// not within a second of one that took over 10 ms (a stall; the finds of that second, on the
    /// database's threads, measure the server again): there it costs
    /// what a synchronous find does (measured within 1 µs of it, against +10 to +50 µs through the
    /// database's threads), and at most one cooperative thread waits for the database's finds.
    /// Choose `.onExecutor` when no cooperative thread may ever wait for the server (other async
    /// work must answer within a round trip), `.onCallingThread` when the server is near and the
    /// process does little but database calls. On SQLite, `.automatic` and `.onCallingThread` run
    /// a find at once whenever a reader is idle; `.onExecutor` never does.
    public var awaitedFinds: AwaitedFindPolicy {
        get { AwaitedFindPolicy(code: awaitedFindGate.policy.load(ordering: .relaxed)) }
        set { awaitedFindGate.policy.store(newValue.code, ordering: .relaxed) }
    }

    /// The average round trip under which ``AwaitedFindPolicy/automatic`` runs a PostgreSQL
    /// find on the calling thread: 75 µs by default (a server on the same machine answers a find
    /// in 15–50 µs; one across a network in 100–500 µs).
    ///
    /// ```swift
    /// db.awaitedFindRoundTripLimit = .microseconds(200)   // a server one switch away
    /// ```
    ///
    /// Raise it for a near server on a fast network whose finds should still run at once (each
    /// then holds a cooperative thread for that long); lower it, or choose `.onExecutor`, to keep
    /// cooperative threads from waiting. Zero or less turns `.automatic`'s finds on the calling
    /// thread off on PostgreSQL. SQLite databases ignore it.
    public var awaitedFindRoundTripLimit: Duration {
        get { .nanoseconds(Int64(clamping: awaitedFindGate.roundTripLimit.load(ordering: .relaxed))) }
        set {
            let (seconds, attoseconds) = newValue.components
            var nanoseconds: UInt64 = 0
            if seconds > 0 || (seconds == 0 && attoseconds > 0) {
                let whole = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
                let sum = whole.partialValue.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
                nanoseconds = whole.overflow || sum.overflow ? .max : sum.partialValue
            }
            awaitedFindGate.roundTripLimit.store(nanoseconds, ordering: .relaxed)
        }
    }

    /// Sets `.automatic`'s limits, in nanoseconds (tests, and tuning experiments); `nil` keeps one.
    package func setAwaitedFindLimits(roundTrip: UInt64? = nil, stall: UInt64? = nil, backOff: UInt64? = nil) {
        if let roundTrip { awaitedFindGate.roundTripLimit.store(roundTrip, ordering: .relaxed) }
        if let stall { awaitedFindGate.stallLimit.store(stall, ordering: .relaxed) }
        if let backOff { awaitedFindGate.stallBackOff.store(backOff, ordering: .relaxed) }
    }

    /// The current round-trip estimate (`nil`: none yet), for tests and diagnostics.
    package var awaitedFindRoundTripEstimate: Duration? {
        let estimate = awaitedFindGate.roundTrip.load(ordering: .relaxed)
        return estimate == 0 ? nil : .nanoseconds(estimate)
    }

    /// Whether a stall's back-off runs now (finds on the calling thread off), for tests and
    /// diagnostics.
    package var isAwaitedFindBackingOff: Bool {
        monotonicNanoseconds() < awaitedFindGate.stalledUntil.load(ordering: .relaxed)
    }

    /// Takes the one slot of a find on the calling thread, as a find running so would (for
    /// tests); `false` when it was taken. Give it back with ``releaseAwaitedFindSlot()``.
    package func takeAwaitedFindSlot() -> Bool {
        awaitedFindGate.inlineSlot.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged
    }

    /// Gives back the slot ``takeAwaitedFindSlot()`` took.
    package func releaseAwaitedFindSlot() { awaitedFindGate.releaseSlot() }
}
