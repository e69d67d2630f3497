// swift-tools-version: 6.3
// The release benchmark: ActiveRecord against the raw sqlite3 C API and
// GRDB.swift, in one process; with a PostgreSQL server given, ActiveRecord on
// PostgreSQL against raw libpq.
//   swift build -c release --product ARBench && .build/release/ARBench [N] [--indexed Q] [--predicate P]
import PackageDescription

let package = Package(
    name: "ARBench",
    dependencies: [
        .package(name: "swift-activerecord", path: ".."),
        // The third side: the same workloads through GRDB's record protocols.
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
    ],
    targets: [
        // The system sqlite3, for the raw side (its own module, so the
        // benchmark does not reach into the library's CSQLite target).
        .systemLibrary(
            name: "CSQLiteRaw",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev", "pkg-config"])]
        ),
        // The system libpq, for the raw side of the PostgreSQL section.
        .systemLibrary(
            name: "CLibPQRaw",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev", "pkg-config"])]
        ),
        .executableTarget(
            name: "ARBench",
            dependencies: [
                "CSQLiteRaw",
                "CLibPQRaw",
                .product(name: "ActiveRecord", package: "swift-activerecord"),
                .product(name: "ActiveRecordPostgreSQL", package: "swift-activerecord"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
