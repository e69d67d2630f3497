// swift-tools-version: 6.0
// Issue 35, point 3: the same PostgreSQL work through four clients in one run — raw libpq used
// the best way (prepared once, binary parameters and results), this library, raw PostgresNIO and
// Fluent (fluent-postgres-driver) — counted in client instructions (callgrind, all threads) and
// wall-clock. Its own package: PostgresNIO, Fluent and what they pull in (swift-nio-ssl,
// swift-crypto…) never reach the library's package graph.
//   swift build -c release && .build/release/PeerBench --help
import PackageDescription

let package = Package(
    name: "PeerBench",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "swift-activerecord", path: "../.."),
        .package(url: "https://github.com/vapor/postgres-nio", exact: "1.33.2"),
        .package(url: "https://github.com/vapor/fluent-kit", exact: "1.57.0"),
        .package(url: "https://github.com/vapor/fluent-postgres-driver", exact: "2.14.0"),
    ],
    targets: [
        // The system libpq, for the raw side (its own module: the benchmark does not reach into
        // the library's ARLibPQ target).
        .systemLibrary(
            name: "CLibPQPeers",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev", "pkg-config"])]
        ),
        .executableTarget(
            name: "PeerBench",
            dependencies: [
                "CLibPQPeers",
                .product(name: "ActiveRecord", package: "swift-activerecord"),
                .product(name: "ActiveRecordPostgreSQL", package: "swift-activerecord"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "FluentKit", package: "fluent-kit"),
                .product(name: "FluentPostgresDriver", package: "fluent-postgres-driver"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
