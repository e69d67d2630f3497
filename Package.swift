// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "swift-activerecord",
    products: [
        .library(name: "ActiveRecord", targets: ["ActiveRecord"]),
        .executable(name: "Quickstart", targets: ["Quickstart"]),
        // The C ABI: libactiverecord.so, with the header include/activerecord.h.
        .library(name: "activerecord", type: .dynamic, targets: ["ActiveRecordC"]),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev", "pkg-config"])]
        ),
        // SQLite connection, values, run-time schema, reflection, records.
        .target(name: "ARCore", dependencies: ["CSQLite"]),
        // Lazy fetcher and predicate language (issue 3).
        .target(name: "ARQuery", dependencies: ["ARCore"]),
        // belongs-to, has-many, has-many-through (issue 4).
        .target(name: "ARRelations", dependencies: ["ARCore", "ARQuery"]),
        // Validators, errors, callbacks (issue 5).
        .target(name: "ARValidation", dependencies: ["ARCore", "ARQuery"]),
        // Automatic and versioned migrations (issue 6).
        .target(name: "ARMigrations", dependencies: ["ARCore"]),
        // The umbrella: re-exports only.
        .target(
            name: "ActiveRecord",
            dependencies: ["ARCore", "ARQuery", "ARRelations", "ARValidation", "ARMigrations"]
        ),
        // The C ABI shim (issue 7).
        .target(name: "ActiveRecordC", dependencies: ["ActiveRecord", "CSQLite"]),
        .executableTarget(
            name: "Quickstart",
            dependencies: ["ActiveRecord"],
            path: "Examples/Quickstart"
        ),
        // A child process the crash tests kill in the middle of a transaction.
        .executableTarget(
            name: "ARStressChild",
            dependencies: ["ActiveRecord"],
            path: "Tests/StressChild"
        ),
        .testTarget(
            name: "ActiveRecordTests",
            dependencies: ["ActiveRecord", "Quickstart", "ARStressChild"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
