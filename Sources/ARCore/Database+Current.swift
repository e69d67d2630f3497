import Synchronization

/// The database models use: configured once, or scoped to a task with `use`.
extension Database {
    private static let configured = Lock<Database?>(nil)

    @TaskLocal private static var scoped: Database?

    /// Configures the database that models use, replacing any earlier one.
    ///
    /// The new database is opened first: if that fails, the error is thrown
    /// and the earlier configuration stays in force. Once replaced, the old
    /// database closes when the last reference to it is gone.
    /// - Returns: the new database.
    @discardableResult
    public static func configure(
        _ location: DatabaseLocation = .default, automaticMigrations: Bool = true, readOnly: Bool = false
    ) throws -> Database {
        let database = try Database(location, automaticMigrations: automaticMigrations, readOnly: readOnly)
        install(database)
        return database
    }

    /// Makes `database` the configured one (for configuring variants in other targets).
    package static func install(_ database: Database) {
        configured.withLock { $0 = database }
    }

    /// The database models use: the one of an enclosing `use(_:)`, else the
    /// configured one, else the default file (opened on first use).
    /// - Throws: when the default database cannot be opened.
    public static var current: Database {
        get throws {
            if let scoped = scopedAddress() { return Unretained<Database>(address: scoped).object }
            return try configuredOrDefault()
        }
    }

    /// Runs `body` with ``current``. The database of an enclosing `use(_:)` is passed on
    /// without a retain and release: the `use` keeps it alive meanwhile, and threads that
    /// share one database then do not write its reference count on every call (the cache
    /// line moving between their cores). The configured one is retained (another thread may
    /// replace it meanwhile).
    @inline(__always)
    package static func withCurrent<R>(_ body: (Database) throws -> R) throws -> R {
        if let scoped = scopedAddress() { return try Unretained<Database>(address: scoped).with(body) }
        return try body(configuredOrDefault())
    }

    /// The configured database, else the default file (opened on first use).
    private static func configuredOrDefault() throws -> Database {
        try configured.withLock { database in
            if let database { return database }
            let opened = try Database(.default)
            database = opened
            return opened
        }
    }

    /// The address of the database of the innermost enclosing `use(_:)` (unretained: the
    /// `use` keeps it alive), read straight from the Concurrency runtime.
    ///
    /// `Database.$scoped.get()` is the same look-up, but `TaskLocal.get()` is not
    /// inlinable: unspecialised, it copies the value out through `Optional`'s value
    /// witness, which costs more than the look-up itself. Every model-level call (`find`,
    /// `delete(id:)`, `save`) reads `current` once (see Benchmarks/README.md, Hot-path notes).
    ///
    /// The runtime's entry point is ABI-stable, but read by its symbol: it is used only on the
    /// compilers it was checked with, and ``scopedAddressPortably()`` everywhere else (the
    /// tests check that both find the same database).
    ///
    /// On a thread that runs no task, the runtime's look-up reads the thread's own bindings,
    /// which only a `use(_:)` run there (outside any task) makes: its mirror
    /// (``threadScopedAddress``) answers instead, one thread-local read against the runtime's
    /// walk (issue 35: a write reads `current` once).
    @inline(__always)
    private static func scopedAddress() -> UnsafeRawPointer? {
        if !runsInTask() { return threadScopedAddress }
        #if compiler(>=6.0) && compiler(<7.0)
        return scopedAddressFromRuntime()
        #else
        return scopedAddressPortably()
        #endif
    }

    /// ``scopedAddress()`` through the Concurrency runtime's look-up.
    @inline(__always)
    package static func scopedAddressFromRuntime() -> UnsafeRawPointer? {
        var key = scopedKey.load(ordering: .acquiring)
        if key == 0 { key = loadScopedKey() }
        // A `Database?` is stored as one address, zero for `nil`.
        return taskLocalValue(forKey: UnsafeRawPointer(bitPattern: key)!)?.load(as: UnsafeRawPointer?.self)
    }

    /// ``scopedAddress()`` through `TaskLocal.get()`: what any compiler supports.
    package static func scopedAddressPortably() -> UnsafeRawPointer? {
        $scoped.get().map { UnsafeRawPointer(Unretained($0).address) }
    }

    /// Whether the calling code runs in a task (else its task-local values are its thread's).
    /// (The runtime's look-up, as `withUnsafeCurrentTask` makes it: that function runs
    /// unspecialised, dearer than the task-local look-up it would spare.)
    @inline(__always)
    package static func runsInTask() -> Bool {
        guard let task = _getCurrentAsyncTask() else { return false }
        // The runtime hands the task out unretained, and the compiler releases what it gets:
        // retained here to balance (as `withUnsafeCurrentTask` does; the pair folds away).
        _ = Unmanaged.passUnretained(unsafeBitCast(task, to: AnyObject.self)).retain()
        return true
    }

    /// The database of the innermost `use(_:)` that runs on this thread outside any task (its
    /// address, unretained: the `use` keeps it alive), 0 for none: what `$scoped` holds for
    /// code of this thread that runs in no task, kept by ``use(_:)`` as it binds it.
    private static let threadScoped = LazyPerThreadWord()

    /// ``threadScoped``'s database.
    package static var threadScopedAddress: UnsafeRawPointer? {
        @inline(__always) get { UnsafeRawPointer(bitPattern: threadScoped.value) }
    }

    /// `$scoped`'s address (the task-local key), once read: a global with a constant initial
    /// value is read without the `swift_once` that `$scoped` costs on every read.
    private static let scopedKey = Atomic<UInt>(0)

    @inline(never)
    private static func loadScopedKey() -> UInt {
        let key = UInt(bitPattern: Unretained($scoped).address)
        scopedKey.store(key, ordering: .releasing)
        return key
    }

    /// Runs `body` with this database as ``current`` for the calling task or
    /// thread (and tasks it creates), whatever is configured globally.
    @discardableResult
    public func use<R>(_ body: () throws -> R) rethrows -> R {
        // Outside any task the binding is the thread's, and so is its mirror (see
        // ``scopedAddress()``), restored as the binding is, on every path.
        guard !Database.runsInTask() else { return try Database.$scoped.withValue(self, operation: body) }
        let outer = Database.threadScoped.value
        Database.threadScoped.value = UInt(bitPattern: Unretained(self).address)
        defer { Database.threadScoped.value = outer }
        return try Database.$scoped.withValue(self, operation: body)
    }

    /// The async form of ``use(_:)``.
    @discardableResult
    public func use<R>(_ body: () async throws -> R) async rethrows -> R {
        try await Database.$scoped.withValue(self, operation: body)
    }
}

/// The Concurrency runtime's task-local look-up (ABI-stable; what `TaskLocal.get()` calls):
/// the address of the value bound to `key` (a `TaskLocal` object) by the innermost
/// `withValue` of the current task, or of the thread when no task runs; `nil` when none is.
@_silgen_name("swift_task_localValueGet")
private func taskLocalValue(forKey key: UnsafeRawPointer) -> UnsafeMutableRawPointer?
