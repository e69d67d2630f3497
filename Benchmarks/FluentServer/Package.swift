// swift-tools-version: 6.0
// The issue-33 HTTP service written with Fluent (fluent-kit and its SQLite and
// PostgreSQL drivers, without Vapor) on Hummingbird 2: the other side of
// `make bench-server`. Its own package: nothing of it reaches the library's
// package graph.
//   swift build -c release && .build/release/FluentServer --port 8081 --database ./fluent.sqlite --seed 100
import PackageDescription

let package = Package(
    name: "FluentServer",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
        .package(url: "https://github.com/vapor/fluent-kit", exact: "1.57.0"),
        .package(url: "https://github.com/vapor/fluent-postgres-driver", exact: "2.14.0"),
        .package(url: "https://github.com/vapor/fluent-sqlite-driver", exact: "4.9.0"),
    ],
    targets: [
        .executableTarget(
            name: "FluentServer",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "FluentKit", package: "fluent-kit"),
                .product(name: "FluentPostgresDriver", package: "fluent-postgres-driver"),
                .product(name: "FluentSQLiteDriver", package: "fluent-sqlite-driver"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
