// swift-tools-version: 6.3
// Swift 6.3 is the minimum: the C shim's `@c` functions (SE-0495) need it, and the
// library uses `SendableMetatype` (6.2). Built and tested with 6.3.1.
import PackageDescription

// Every target name starts with AR or ActiveRecord: SwiftPM requires target names to be
// unique across all the packages of a program, so generic names (Quickstart, CSQLite)
// would clash with a user's own.
let package = Package(
    name: "swift-activerecord",
    // What the code needs: Synchronization's Atomic (macOS 15, iOS 18 and their kin). Tested
    // on Linux only (see Platforms in the Getting started article, ActiveRecord.docc).
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "ActiveRecord", targets: ["ActiveRecord"]),
        // The PostgreSQL engine (libpq): `Database(.postgres("postgresql://…"))`. A program that
        // uses only SQLite does not depend on it, and needs no libpq.
        .library(name: "ActiveRecordPostgreSQL", targets: ["ActiveRecordPostgreSQL"]),
        .executable(name: "ActiveRecordQuickstart", targets: ["ActiveRecordQuickstart"]),
        .executable(name: "ActiveRecordPostgreSQLExample", targets: ["ActiveRecordPostgreSQLExample"]),
        // The C ABI: libactiverecord.so, with the header include/activerecord.h.
        .library(name: "activerecord", type: .dynamic, targets: ["ARCShim"]),
    ],
    dependencies: [
        // The library's package dependencies, the server ecosystem's three facades (each with no
        // dependency of its own): its log (SQL at trace, migrations at info, drift left alone at
        // warning, pool events at debug) goes to a swift-log Logger; its query durations and pool
        // gauges to swift-metrics; a span per statement to swift-distributed-tracing. With no
        // backend bootstrapped, the last two cost nothing per statement (DatabaseInstrumentation).
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
    ],
    targets: [
        // The system sqlite3 (pkg-config `sqlite3`).
        .systemLibrary(
            name: "ARSQLite3",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev", "pkg-config"])]
        ),
        // The system libpq (pkg-config `libpq`), for the PostgreSQL engine only.
        .systemLibrary(
            name: "ARLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev", "pkg-config"])]
        ),
        // SQLite's mutexes as glibc's adaptive ones (they spin before they sleep), which the
        // library installs before SQLite initializes: reader threads then overlap.
        .target(name: "ARSQLiteMutexes", dependencies: ["ARSQLite3"]),
        // The core: the backend boundary (it names no engine), connections, statements, values,
        // schema, reflection and key-path resolution, records and their CRUD, transactions,
        // automatic migration, and the hooks the feature targets plug into (callbacks,
        // validation, relation fields).
        .target(
            name: "ARCore",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The SQLite engine: the backend boundary implemented over the system sqlite3, and the
        // embedded locations (a file, memory, a temporary file, the program's default).
        .target(name: "ARSQLite", dependencies: ["ARCore", "ARSQLite3", "ARSQLiteMutexes"]),
        // The lazy query, its compiler and the predicate language; cursors.
        .target(name: "ARQuery", dependencies: ["ARCore"]),
        // @BelongsTo, @HasMany, @HasManyThrough, dependencies, eager loading.
        .target(name: "ARRelations", dependencies: ["ARCore", "ARQuery"]),
        // The validation engine: `Validating` models and the rules of run-time (C) models.
        .target(name: "ARValidation", dependencies: ["ARCore"]),
        // The drift report and versioned migrations.
        .target(name: "ARMigrations", dependencies: ["ARCore"]),
        // The PostgreSQL engine: the backend boundary implemented over libpq.
        .target(name: "ActiveRecordPostgreSQL", dependencies: ["ARCore", "ARLibPQ"]),
        // The umbrella: re-exports only.
        .target(
            name: "ActiveRecord",
            dependencies: ["ARCore", "ARSQLite", "ARQuery", "ARRelations", "ARValidation", "ARMigrations"]
        ),
        // The C ABI shim, on both engines (libactiverecord.so links sqlite3 and libpq).
        .target(name: "ARCShim", dependencies: ["ActiveRecord", "ActiveRecordPostgreSQL"]),
        .executableTarget(
            name: "ActiveRecordQuickstart",
            dependencies: ["ActiveRecord"],
            path: "Examples/Quickstart"
        ),
        // The same models on PostgreSQL (make run-postgres).
        .executableTarget(
            name: "ActiveRecordPostgreSQLExample",
            dependencies: ["ActiveRecord", "ActiveRecordPostgreSQL"],
            path: "Examples/PostgreSQL"
        ),
        // The examples `make test` runs and compares with their .expected output (Examples/*/).
        .executableTarget(name: "ActiveRecordExampleLibrary", dependencies: ["ActiveRecord"], path: "Examples/Library", exclude: ["expected.txt"]),
        .executableTarget(name: "ActiveRecordExampleValidations", dependencies: ["ActiveRecord"], path: "Examples/Validations", exclude: ["expected.txt"]),
        .executableTarget(
            name: "ActiveRecordExampleMigrations", dependencies: ["ActiveRecord", .product(name: "Logging", package: "swift-log")],
            path: "Examples/Migrations", exclude: ["expected.txt"]),
        .executableTarget(name: "ActiveRecordExampleThreads", dependencies: ["ActiveRecord"], path: "Examples/Threads", exclude: ["expected.txt"]),
        // A child process the crash tests kill in the middle of a transaction.
        .executableTarget(
            name: "ActiveRecordStressChild",
            dependencies: ["ActiveRecord", "ActiveRecordPostgreSQL", .product(name: "Logging", package: "swift-log")],
            path: "Tests/StressChild"
        ),
        // The engine conformance suite: what every engine must do, checked through a database of
        // it (`EngineConformance.runAll`), and an engine that only records the SQL it is given,
        // for compiler tests without a database. Not a product: the tests run it on each engine.
        .target(name: "ARConformance", dependencies: ["ActiveRecord"]),
        .testTarget(
            name: "ActiveRecordTests",
            dependencies: [
                "ActiveRecord", "ActiveRecordPostgreSQL", "ARConformance", "ActiveRecordQuickstart", "ActiveRecordPostgreSQLExample",
                "ActiveRecordStressChild", .product(name: "Logging", package: "swift-log"),
                // A metrics factory and a tracer that record, for InstrumentationTests.
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                // SQLite's mutex API, to test the mutexes the library gives it (SQLiteMutexTests).
                "ARSQLite3",
            ],
            // The checked-in schema dumps SchemaDumpTests compares with (read by path).
            exclude: ["Fixtures"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// The documentation plugin, only when asked (`make docs` sets AR_DOCS=1), so that it never
// reaches the package graphs of the library's users (as GRDB does).
if Context.environment["AR_DOCS"] != nil {
    package.dependencies.append(.package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"))
}
