#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Synchronization

/// The threads an async call's database work runs on: threads the library owns, as many as
/// the engine can use at once, so that awaiting callers never block a thread of Swift
/// concurrency's cooperative pool, and a burst of calls never makes a thread per call.
///
/// - A ``ConnectionSharing/singleWriter(readers:)`` database (SQLite) has a lane of one
///   thread for writes (the single writer) and a lane of one thread per reader connection
///   for reads (none without readers: reads then go to the writer's lane).
/// - A ``ConnectionSharing/pool(maximum:wait:)`` database (PostgreSQL) has one lane of one
///   thread per pooled connection, for reads and writes alike.
///
/// A call is a job in its lane's queue: served in the order calls arrived; its caller is
/// suspended (no thread blocked) until a thread of the lane has run it. Threads start on
/// demand, up to the lane's size, and stay for the database's life. One more thread, the
/// watchdog, wakes while calls wait or run with a deadline, to end those past it.
package final class DatabaseExecutor: Sendable {
    /// Where a lane's calls run.
    package enum LaneKind { case writes, reads }

    let writeLane: ExecutorLane
    /// `nil`: reads go to ``writeLane`` (no reader connections, or a pooled engine).
    let readLane: ExecutorLane?
    let watchdog: ExecutorWatchdog

    init(writers: Int, readers: Int) {
        watchdog = ExecutorWatchdog()
        writeLane = ExecutorLane(threads: writers, of: "database threads", watchdog: watchdog)
        readLane = readers > 0 ? ExecutorLane(threads: readers, of: "reader threads", watchdog: watchdog) : nil
        watchdog.lanes = ([writeLane] + (readLane.map { [$0] } ?? [])).map(ExecutorWatchdog.LaneReference.init)
    }

    deinit {
        writeLane.shutDown()
        readLane?.shutDown()
        watchdog.shutDown()
    }

    /// How many threads the executor may run at most: its lanes' and the watchdog.
    var threadLimit: Int { writeLane.threadLimit + (readLane?.threadLimit ?? 0) + 1 }

    /// The lane for a call of `kind`.
    func lane(for kind: LaneKind) -> ExecutorLane {
        kind == .reads ? readLane ?? writeLane : writeLane
    }
}

/// One async call's database work, and where it stands: waiting in its lane, running on a
/// thread of it (and on which connection), or done; and whether it was stopped (its task
/// cancelled, its deadline passed).
///
/// Its outcome (the work's result or error) is handed to the caller exactly once: by the
/// thread that ran it, or, when it is stopped while waiting, by whoever stopped it (it then
/// leaves the queue: its lane skips it). The hand-over is one atomic word, `handoff`:
///
/// ```
///            caller installs its continuation       publisher: outcome written, then
///   idle ──────────────────────────────────▶ waiting ─────────────────────────────▶ resumed
///     │        (CAS, releasing)                       resumes the caller, then stores
///     │                                               `resumed` (releasing)
///     └──────────────────────────────────────────────────────────────────────────▶ done
///              publisher: outcome written, then CAS idle → done (releasing)
/// ```
///
/// - The publisher writes the outcome (``error``, or the result into ``resultStorage``) before
///   it touches the word, so whoever acquires `done` or `resumed` sees the whole outcome.
/// - The caller installs its continuation before its CAS idle → waiting, so a publisher that
///   sees `waiting` (its CAS idle → done failed, acquiring) sees the continuation.
/// - Exactly one side resumes the caller: the publisher when it saw `waiting`; the caller
///   itself when its CAS lost to `done` (it never waited).
/// - Once the caller has acquired `done` or `resumed`, the publisher touches nothing of the job
///   or of the caller's continuation again. A resumed caller waits for `resumed`, not only
///   for being resumed: Swift's runtime lets a continuation resumed before its task suspended
///   go on at once, without an edge the thread sanitizer sees, and the caller's next
///   continuation may lie where this one was. The wait is for the publisher's few
///   instructions between `resume()` and its store.
final class ExecutorJob: @unchecked Sendable {
    // @unchecked Sendable: `run` is set before the job is queued (under its lane's lock) and
    // read by the one thread that takes it; the outcome (`error`, `resultStorage`'s bytes) is
    // written by the one publisher before it touches `handoff`, and read by the caller after
    // acquiring `done` or `resumed`; `continuation` is written by the caller before its
    // releasing CAS and read by the publisher after acquiring `waiting`; everything else is
    // atomic or behind `state`'s lock. The result lives in raw memory, reached through a
    // pointer (no Swift access to check or instrument): the hand-over orders its two uses.

    /// Why a job stopped before it finished.
    enum Stop {
        case cancelled
        /// The call's deadline passed (its `timeout:`, ``limit``).
        case deadline
        /// It waited in its lane's queue longer than the database's connection-wait timeout
        /// (``waitLimit``).
        case waited(lane: String, threads: Int)
    }

    private enum Phase { case waiting, running, done }

    private struct State {
        var phase = Phase.waiting
        var stop: Stop?
        /// The connection the job runs on, while it runs: the one to interrupt.
        var connection: Unretained<Connection>?
        /// Whether the job was queued (its caller will be handed its outcome).
        var isQueued = false
    }

    /// Where the outcome's hand-over stands (see the type's description).
    private enum Handoff {
        /// Not handed over; the caller is not waiting.
        static let idle: UInt8 = 0
        /// The caller is waiting, its continuation installed: the publisher resumes it.
        static let waiting: UInt8 = 1
        /// Handed over before the caller waited: the caller takes it without being resumed.
        static let done: UInt8 = 2
        /// Handed over, and the caller resumed: the publisher is done with the job.
        static let resumed: UInt8 = 3
    }

    /// One per call: its mutex needs no cache line of its own (an aligned allocation costs
    /// `posix_memalign`'s several hundred instructions).
    private let state = Lock(State(), cacheLineAligned: false)
    /// Whether ``state``'s `stop` is set: read by every statement of the job.
    private let stopped = Atomic<Bool>(false)
    private let handoff = Atomic<UInt8>(Handoff.idle)
    /// The call's deadline (its `timeout:`) in ``monotonicNanoseconds()``; 0: none.
    let deadline: UInt64
    /// The call's limit (for messages).
    let limit: Duration?
    /// When the job must have left its queue (the database's connection-wait timeout), in
    /// ``monotonicNanoseconds()``; 0: never.
    let waitDeadline: UInt64
    /// The database's connection-wait timeout in nanoseconds when the job was made;
    /// `UInt64.max`: none.
    private let waitNanoseconds: UInt64
    /// The connection-wait timeout (for messages).
    var waitLimit: Duration? { waitNanoseconds == .max ? nil : .nanoseconds(Int64(clamping: waitNanoseconds)) }

    /// Runs the call on the lane's thread, keeping its outcome in the job (``keep(_:)`` or
    /// ``error``).
    nonisolated(unsafe) var run: ((ExecutorJob) -> Void)?
    /// The outcome when the call failed.
    nonisolated(unsafe) var error: (any Error)?
    /// The caller's continuation, once it suspended.
    nonisolated(unsafe) private var continuation: UnsafeContinuation<Void, Never>?
    /// The result's storage: ``inlineResultSize`` bytes, enough for a record, an optional
    /// record, a count; a larger or more aligned result goes in a buffer of its own, whose
    /// address is kept in the storage's first word. Raw memory, not generic, so that a call
    /// needs no generic type's metadata and no Swift access to it is checked.
    private let resultStorage: UnsafeMutableRawPointer
    /// Whether the result went to a buffer of its own (written and read as the storage is).
    nonisolated(unsafe) private var resultIsBoxed = false
    private static let inlineResultSize = 32
    /// What `malloc` aligns to at least: a larger alignment would take `posix_memalign`,
    /// several hundred instructions a call (and a result that needs it is rare: it is boxed).
    private static let inlineResultAlignment = MemoryLayout<Int>.alignment

    /// When the job was queued (``monotonicNanoseconds()``), when its database reports
    /// metrics (its wait is then recorded); 0 otherwise.
    let queuedAt: UInt64

    /// - Parameters:
    ///   - limit: the call's `timeout:`, if any.
    ///   - waitNanoseconds: the database's connection-wait timeout in nanoseconds (`.max`: none),
    ///     kept as such by the database so that no call converts a `Duration`.
    ///   - timed: whether the database reports metrics (the wait is then timed).
    init(limit: Duration?, waitNanoseconds: UInt64, timed: Bool) {
        let now = limit != nil || waitNanoseconds != .max || timed ? monotonicNanoseconds() : 0
        queuedAt = timed ? now : 0
        self.limit = limit
        deadline = limit.map { now &+ $0.clampedNanoseconds } ?? 0
        self.waitNanoseconds = waitNanoseconds
        waitDeadline = waitNanoseconds == .max ? 0 : now &+ waitNanoseconds
        resultStorage = .allocate(byteCount: Self.inlineResultSize, alignment: Self.inlineResultAlignment)
    }

    deinit {
        // A result never taken (the caller gone) is not released: only a caller takes one.
        if resultIsBoxed { resultStorage.load(as: UnsafeMutableRawPointer.self).deallocate() }
        resultStorage.deallocate()
    }

    /// Whether the job was stopped (one relaxed load: every statement of the job asks).
    @inline(__always)
    var isStopped: Bool { stopped.load(ordering: .relaxed) }

    /// The error a stopped job's work ends with.
    func stopError() -> any Error { error(for: state.withLock { $0.stop }) }

    private func error(for stop: Stop?) -> any Error {
        switch stop {
        case .cancelled, nil:
            return CancellationError()
        case .deadline:
            let limit = limit ?? .zero
            return ActiveRecordError(
                .timeout,
                "the call ran longer than its timeout of \(limit.limitDescription) (waiting for a connection and running) "
                    + "and was stopped; nothing it did in its transaction was kept. Raise the timeout, or make the work faster")
        case .waited(let lane, let threads):
            let limit = waitLimit ?? .zero
            return ActiveRecordError(
                .busy,
                "the call waited \(limit.limitDescription) for one of the \(threads) \(lane) and was given up; nothing "
                    + "ran. The database is busier than its connections can serve: raise Database.connectionWaitTimeout, "
                    + "hold connections for less time, or open the database with more connections")
        }
    }

    // MARK: The outcome

    /// Keeps the work's result (the publisher, before ``handOver()``).
    func keep<R>(_ value: consuming R) {
        if MemoryLayout<R>.size <= Self.inlineResultSize, MemoryLayout<R>.alignment <= Self.inlineResultAlignment {
            resultStorage.initializeMemory(as: R.self, to: value)
        } else {
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<R>.size, alignment: MemoryLayout<R>.alignment)
            buffer.initializeMemory(as: R.self, to: value)
            resultStorage.storeBytes(of: buffer, as: UnsafeMutableRawPointer.self)
            resultIsBoxed = true
        }
    }

    /// Takes the result kept (the caller, once handed over, when ``error`` is `nil`).
    func takeResult<R>(as type: R.Type) -> R {
        guard resultIsBoxed else { return resultStorage.assumingMemoryBound(to: R.self).move() }
        let buffer = resultStorage.load(as: UnsafeMutableRawPointer.self)
        resultIsBoxed = false
        defer { buffer.deallocate() }
        return buffer.assumingMemoryBound(to: R.self).move()
    }

    /// Hands the outcome (kept, or ``error``) to the caller, resuming it if it waits. Called
    /// once: by the thread that ran the job, or by ``stop(_:)`` for a job that waited. The job
    /// is not touched after it.
    private func handOver() {
        let (published, _) = handoff.compareExchange(expected: Handoff.idle, desired: Handoff.done, ordering: .acquiringAndReleasing)
        if published { return }
        // The caller waits (only it leaves `idle`, for `waiting`): its continuation is installed.
        continuation.unsafelyUnwrapped.resume()
        handoff.store(Handoff.resumed, ordering: .releasing)
    }

    /// Whether the outcome was handed over before the caller waited (acquiring it).
    @inline(__always)
    var isHandedOver: Bool { handoff.load(ordering: .acquiring) == Handoff.done }

    /// Looks for the outcome for up to `nanoseconds`, yielding the core between looks: whether
    /// it was handed over (then the caller takes it without suspending).
    func lookForHandOver(nanoseconds: UInt64) -> Bool {
        let until = monotonicNanoseconds() &+ nanoseconds
        while true {
            for _ in 0..<64 where isHandedOver { return true }
            if monotonicNanoseconds() >= until { return false }
            sched_yield()
        }
    }

    /// Suspends the caller until the outcome is handed over (not at all if it was), and until
    /// its publisher is done with the job.
    func awaitHandOver(isolation: isolated (any Actor)? = #isolation) async {
        await withUnsafeContinuation(isolation: isolation) { (continuation: UnsafeContinuation<Void, Never>) in
            self.continuation = continuation
            let (waits, _) = handoff.compareExchange(expected: Handoff.idle, desired: Handoff.waiting, ordering: .acquiringAndReleasing)
            // Lost to `done` (acquired): the outcome is here, nobody else resumes this caller.
            if !waits { continuation.resume() }
        }
        // Resumed by the publisher: it may still be returning from `resume()`.
        while handoff.load(ordering: .acquiring) == Handoff.waiting { sched_yield() }
    }

    // MARK: Running

    /// Called once by the caller's task, when the job is in its lane's queue (or about to be):
    /// `false` when it was stopped already (then the caller fails at once).
    func markQueued() -> Bool {
        state.withLock { state in
            guard state.stop == nil else { return false }
            state.isQueued = true
            return true
        }
    }

    /// The lane's thread takes the job: `false` when it left the queue (stopped meanwhile).
    func start() -> Bool {
        state.withLock { state in
            guard state.phase == .waiting, state.stop == nil else { return false }
            state.phase = .running
            return true
        }
    }

    /// The job's work runs on `connection` from now: an interrupt stops its statement, and a
    /// stopped job's next statement fails at its start. `false` when the job was stopped
    /// first (the work must not run).
    func arm(_ connection: Connection) -> Bool {
        let armed = state.withLock { state in
            guard state.stop == nil else { return false }
            state.connection = Unretained(connection)
            return true
        }
        if armed { connection.runningJob = self }
        return armed
    }

    /// The job's own work has ended on `connection`: what runs there next (its transaction's
    /// `COMMIT` or `ROLLBACK`, a read transaction's end) is not interrupted. An interrupt in
    /// flight is waited for.
    func disarm(_ connection: Connection) {
        guard connection.runningJob === self else { return }
        connection.runningJob = nil
        state.withLock { $0.connection = nil }
    }

    /// Runs `body` with the job armed on `connection`; the job is stopped → its error.
    func armed<R>(on connection: Connection, _ body: () throws -> R) throws -> R {
        guard arm(connection) else { throw stopError() }
        defer { disarm(connection) }
        return try body()
    }

    /// The job is done (its outcome kept): nothing interrupts anything for it from now, and its
    /// caller is handed the outcome.
    func complete() {
        state.withLock { state in
            state.connection = nil
            state.phase = .done
        }
        handOver()
    }

    /// Stops the job: a waiting job leaves the queue (its caller is failed now); a running
    /// one's statement is interrupted in the engine, and its next statement fails; a done one
    /// is left alone. Returns whether it was still waiting or running.
    @discardableResult
    func stop(_ reason: Stop) -> Bool {
        enum Action { case none, failedWaiting, interrupt }
        let action: Action = state.withLock { state in
            guard state.stop == nil, state.phase != .done else { return .none }
            state.stop = reason
            stopped.store(true, ordering: .relaxed)
            switch state.phase {
            case .waiting:
                guard state.isQueued else { return .none }  // not queued yet: markQueued fails it
                state.phase = .done
                return .failedWaiting
            case .running:
                if let connection = state.connection { connection.with { $0.interrupt() } }
                return .interrupt
            case .done:
                return .none
            }
        }
        switch action {
        case .none: return false
        case .failedWaiting:
            // The lane skips the job from now (its phase is done): no other thread writes its outcome.
            error = error(for: reason)
            handOver()
            return true
        case .interrupt:
            keepInterrupting()
            return true
        }
    }

    /// An interrupt that reached the connection between two statements (or just before one
    /// began) changes nothing: the next statement then stops at its start, but a statement
    /// that began meanwhile runs on. So the job is interrupted again every 10 ms until its
    /// work has ended.
    private func keepInterrupting() {
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(10)) { [self] in
            let running = state.withLock { state -> Bool in
                guard state.phase == .running else { return false }
                if let connection = state.connection { connection.with { $0.interrupt() } }
                return true
            }
            if running { keepInterrupting() }
        }
    }

    /// The stop for a job past its call deadline at `now` (``monotonicNanoseconds()``), if it is.
    func expiry(at now: UInt64) -> Stop? {
        if deadline != 0, now >= deadline { return .deadline }
        return nil
    }
}

/// One lane of the executor: a queue of jobs served in order by up to `threadLimit` threads.
///
/// An idle thread sleeps on a semaphore of its own, on a stack: a new job wakes the thread that
/// went to sleep last (its caches, and its pooled connection, still warm), and starts a new
/// thread only when none sleeps. Under light load a few threads do all the work; the others
/// stay asleep (on 2 cores, waking every thread in turn cost a context switch or two more per
/// call and a long tail of waits).
final class ExecutorLane: @unchecked Sendable {
    // @unchecked Sendable: everything mutable is in `state`, behind its lock.
    private struct State {
        var queue: [ExecutorJob] = []
        /// The index of the first job of `queue` not yet taken.
        var head = 0
        var threads = 0
        /// The sleeping threads' semaphores, the one that slept last on top.
        var sleepers: [DispatchSemaphore] = []
        /// Threads looking for work a little longer before they sleep (see ``work()``): a new
        /// job is left to them, no thread woken.
        var spinning = 0
        /// Jobs submitted for the spinning threads to take (at most one each).
        var claimed = 0
        var isShutDown = false
    }

    /// What its threads are, for messages ("reader threads").
    let threadsDescription: String
    let threadLimit: Int
    private let state = Lock(State())
    /// How many jobs wait in `queue`, for threads looking for work without the lock.
    private let queued = Atomic<Int>(0)
    /// Strong: a thread finishing its last job may outlive the executor for a moment.
    private let watchdog: ExecutorWatchdog

    init(threads: Int, of description: String, watchdog: ExecutorWatchdog) {
        threadsDescription = description
        threadLimit = max(1, threads)
        self.watchdog = watchdog
    }

    /// How many jobs wait (stopped ones included until a thread skips them).
    var waitingCount: Int { state.withLock { $0.queue.count - $0.head } }

    /// Queues `job` (its `run` set), leaving it to a thread looking for work, else waking the
    /// thread that slept last or starting one. Returns whether a thread took it at once (`false`:
    /// it waits for a busy thread).
    ///
    /// The watchdog is told of a job with a call deadline (it watches it running too), and of
    /// one that waits for a busy thread when it has a wait deadline; a job taken at once does
    /// not wait, so the watchdog is left asleep (waking it per call cost a context switch or
    /// two each).
    @discardableResult
    func submit(_ job: ExecutorJob) -> Bool {
        enum Next {
            case claimed, wake(DispatchSemaphore), start, wait
            var isClaimed: Bool { if case .claimed = self { true } else { false } }
        }
        let next = state.withLock { state -> Next in
            state.queue.append(job)
            queued.store(state.queue.count - state.head, ordering: .releasing)
            if state.spinning > state.claimed {
                state.claimed += 1
                return .claimed
            }
            if let sleeper = state.sleepers.popLast() { return .wake(sleeper) }
            guard state.threads < threadLimit else { return .wait }
            state.threads += 1
            return .start
        }
        let waits: Bool
        switch next {
        case .claimed: waits = false
        case .wake(let sleeper):
            sleeper.signal()
            waits = false
        case .start:
            startThreadOrStop(name: "ar.worker", for: "a database worker thread") { [self] in work() }
            waits = false
        case .wait: waits = true
        }
        if job.deadline != 0 {
            watchdog.track(job)
            watchdog.watch()
        } else if waits, job.waitDeadline != 0 {
            watchdog.watch()
        }
        return next.isClaimed
    }

    /// Stops the waiting jobs past the database's wait timeout at `now` (for the watchdog);
    /// whether any job waits.
    func expireWaiting(at now: UInt64) -> Bool {
        let (expired, waiting) = state.withLock { state -> ([ExecutorJob], Bool) in
            var expired: [ExecutorJob] = []
            // In arrival order, so wait deadlines come in order: the first not yet passed ends it.
            for job in state.queue[state.head...] {
                guard job.waitDeadline != 0, now >= job.waitDeadline else { break }
                expired.append(job)
            }
            return (expired, state.head < state.queue.count)
        }
        for job in expired {
            job.stop(.waited(lane: threadsDescription, threads: threadLimit))
        }
        return waiting
    }

    /// How long a thread that ran out of work looks for more before it sleeps.
    static let spinNanoseconds: UInt64 = 50_000

    /// How long the lane's last job ran (ns): a caller waits for a job like it without
    /// suspending only when it was short (see ``Database/perform(_:_:timeout:_:)``).
    let lastRunNanoseconds = Atomic<UInt64>(UInt64.max)

    /// A thread that ran out of work looks for more a moment (``spinNanoseconds``), yielding the
    /// core between looks: an awaited call's caller makes its next call some microseconds
    /// after this one ended, and waking a sleeping thread for it costs more.
    private func lookForWork() {
        let until = monotonicNanoseconds() &+ ExecutorLane.spinNanoseconds
        while true {
            for _ in 0..<64 where queued.load(ordering: .acquiring) != 0 { return }
            if monotonicNanoseconds() >= until { return }
            sched_yield()
        }
    }

    func shutDown() {
        let sleepers = state.withLock { state -> [DispatchSemaphore] in
            state.isShutDown = true
            defer { state.sleepers = [] }
            return state.sleepers
        }
        for sleeper in sleepers { sleeper.signal() }
    }

    /// A thread's loop: takes the next job, runs it, until the lane shuts down.
    private func work() {
        let sleeper = DispatchSemaphore(value: 0)
        var spun = false
        while true {
            enum Next { case job(ExecutorJob), spin, sleep, exit }
            // What to do after the job: look for work, sleep, or end. The job taken is out of
            // scope by then, so that this thread lets go of it before its caller does (see
            // ``run(_:)``).
            enum After { case spin, sleep, exit, next }
            let after: After
            do {
                let next = state.withLock { state -> Next in
                    if spun {
                        state.spinning -= 1
                        if state.claimed > 0 { state.claimed -= 1 }
                    }
                    if state.head < state.queue.count {
                        spun = false
                        let job = state.queue[state.head]
                        state.head += 1
                        queued.store(state.queue.count - state.head, ordering: .relaxed)
                        if state.head == state.queue.count {
                            state.queue.removeAll(keepingCapacity: state.queue.capacity <= 1024)
                            state.head = 0
                        } else if state.head >= 1024, state.head * 2 >= state.queue.count {
                            state.queue.removeFirst(state.head)
                            state.head = 0
                        }
                        return .job(job)
                    }
                    if state.isShutDown {
                        state.threads -= 1
                        return .exit
                    }
                    if !spun {
                        state.spinning += 1
                        return .spin
                    }
                    spun = false
                    state.sleepers.append(sleeper)
                    return .sleep
                }
                switch next {
                case .job(let job):
                    after = run(job) ? .spin : .next
                case .spin: after = .spin
                case .sleep: after = .sleep
                case .exit: after = .exit
                }
            }
            switch after {
            case .spin:
                spun = true
                lookForWork()
            case .sleep:
                sleeper.wait()
            case .exit:
                return
            case .next:
                continue
            }
        }
    }

    /// Runs a job taken from the queue, and hands its outcome to its caller; `false` when it
    /// was stopped while it waited (its stopper handed its outcome over). Returns whether the
    /// thread was counted as looking for work (before the caller was resumed: its next call,
    /// made a few microseconds from now, finds this thread instead of waking another).
    ///
    /// The job, its lock and its result storage, and its `run` closure, were allocated by the
    /// caller's thread: this thread lets go of the job as soon as it is handed over (and does
    /// not release `run` itself), so that the caller, resumed a few microseconds later, is
    /// almost always the one to free them. Freed on the thread that allocated them, they go
    /// back to its allocator's per-thread cache instead of crossing arenas (issue 35, point 8:
    /// the async rows of scripts/bench-instructions.sh).
    private func run(_ job: ExecutorJob) -> Bool {
        guard job.start() else {
            // Stopped while it waited: its stopper handed its outcome over, and its caller may
            // be done with it; `run` goes with the job.
            if job.deadline != 0 { watchdog.untrack(job) }
            return false
        }
        let started = monotonicNanoseconds()
        job.run.unsafelyUnwrapped(job)
        lastRunNanoseconds.store(monotonicNanoseconds() &- started, ordering: .relaxed)
        if job.deadline != 0 { watchdog.untrack(job) }
        state.withLock { $0.spinning += 1 }
        job.complete()
        return true
    }
}

/// The executor's watchdog thread: while some job waits, or runs with a call deadline, it
/// wakes every 10 ms and stops the jobs past theirs (a waiting job past the database's
/// connection-wait timeout, a job past its call's timeout). Asleep otherwise.
final class ExecutorWatchdog: @unchecked Sendable {
    // @unchecked Sendable: `lanes` is set once, before any job; the rest is behind `state`.
    private struct State {
        /// Jobs with a call deadline, by identity, until they are done.
        var timed: [ObjectIdentifier: ExecutorJob] = [:]
        var isStarted = false
        var isShutDown = false
        /// Whether a job came since the watchdog last looked.
        var isPoked = false
    }

    /// A lane, weakly (lanes hold the watchdog).
    struct LaneReference {
        weak var lane: ExecutorLane?
        init(_ lane: ExecutorLane) { self.lane = lane }
    }

    nonisolated(unsafe) var lanes: [LaneReference] = []
    private let state = ConditionLock(State())

    /// Wakes the watchdog (starting it the first time): a job with a deadline was queued.
    func watch() {
        let start = state.withLock { state -> Bool in
            state.isPoked = true
            if state.isStarted { return false }
            state.isStarted = true
            return true
        }
        guard start else { return state.signal() }
        startThreadOrStop(name: "ar.watchdog", for: "the database call watchdog") { [self] in loop() }
    }

    /// Keeps `job` (which has a call deadline) in view until ``untrack(_:)``.
    func track(_ job: ExecutorJob) { state.withLock { $0.timed[ObjectIdentifier(job)] = job } }

    func untrack(_ job: ExecutorJob) { state.withLock { _ = $0.timed.removeValue(forKey: ObjectIdentifier(job)) } }

    func shutDown() {
        state.withLock { $0.isShutDown = true }
        state.signalAll()
    }

    private func loop() {
        var watching = true
        while true {
            // Asleep while nothing waits or runs with a deadline, until a job comes.
            let timed: [ExecutorJob]? = state.waitForever { state -> [ExecutorJob]?? in
                if state.isShutDown { return .some(nil) }
                guard watching || state.isPoked || !state.timed.isEmpty else { return nil }
                state.isPoked = false
                return .some(Array(state.timed.values))
            }
            guard let timed else { return }
            let now = monotonicNanoseconds()
            watching = !timed.isEmpty
            for job in timed {
                if let stop = job.expiry(at: now) {
                    job.stop(stop)
                    untrack(job)
                }
            }
            for reference in lanes where reference.lane?.expireWaiting(at: now) == true { watching = true }
            if watching { usleep(10_000) }
        }
    }
}

/// Starts a detached thread of the library's own that runs `body` (which keeps what it needs),
/// named `name` for `top -H`, `ps -L` and debuggers (Linux keeps 15 bytes of it: names here are
/// `ar.` and a word).
/// - Throws: `.engine` with the system's words when the system will not start a thread (it
///   ran out of threads or memory: `pthread_create` failed); `what` says what the thread is for.
package func startThread(name: String, for what: String, _ body: @escaping @Sendable () -> Void) throws {
    precondition(name.utf8.count <= 15, "a thread name has at most 15 bytes on Linux: \(name)")
    let work = Unmanaged.passRetained(ThreadWork(name: name, body))
    var thread = pthread_t()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    let created = pthread_create(&thread, &attributes, { argument in
        let work = Unmanaged<ThreadWork>.fromOpaque(argument!).takeRetainedValue()
        // A name is an aid: failing to set it changes nothing.
        #if canImport(Glibc)
        _ = setThreadName.map { $0(pthread_self(), work.name) }
        #elseif canImport(Darwin)
        _ = pthread_setname_np(work.name)
        #endif
        work.body()
        return nil
    }, work.toOpaque())
    guard created == 0 else {
        work.release()
        throw ActiveRecordError(
            .engine, "cannot start \(what) (thread \(name)): \(systemErrorDescription(code: created)); "
                + "the process has too many threads or too little memory")
    }
}

/// ``startThread(name:for:_:)`` where the caller cannot throw: the executor's workers and its
/// watchdog start inside `submit`, after the job is queued, and `submit` has no error path (its
/// callers wait for the job; a worker not started could leave it queued for ever, a watchdog not
/// started would leave its deadline unenforced). A system that cannot start one more thread
/// stops the program there, saying why, as the precondition before did.
package func startThreadOrStop(name: String, for what: String, _ body: @escaping @Sendable () -> Void) {
    do {
        try startThread(name: name, for: what, body)
    } catch {
        preconditionFailure("\(error)")
    }
}

#if canImport(Glibc)
/// glibc's `pthread_setname_np(thread, name)`, found once by name: Swift's Glibc module leaves it
/// out (a GNU extension, declared only under `_GNU_SOURCE`). `nil` if the C library lacks it.
private let setThreadName: (@convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32)? = {
    guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "pthread_setname_np") else { return nil }
    return unsafeBitCast(symbol, to: (@convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32).self)
}()
#endif

/// What a thread of ``startThread(name:for:_:)`` runs, and its name.
private final class ThreadWork {
    let name: String
    let body: @Sendable () -> Void
    init(name: String, _ body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }
}

extension Duration {
    /// The duration in whole nanoseconds, negative ones as 0, huge ones as about 292 years
    /// (a deadline's offset from ``monotonicNanoseconds()``, which never overflows by it).
    var clampedNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        guard seconds < 1 << 33 else { return 1 << 63 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }
}
