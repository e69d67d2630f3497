// swift-tools-version: 6.3
// A user's package, as a new user would write it: its own executable `Quickstart` and its
// own C target `CSQLite` (the generic names many packages use), depending on
// swift-activerecord by URL with the README's line. SwiftPM requires target names to be unique
// across every package of a program, so this resolves only if the library's targets have names
// of its own. It also bootstraps metrics and tracing, once for the process as a server does,
// and checks that a find is timed and traced. `make package-graph` (part of `make test`,
// scripts/test-package-graph.sh) copies it to a temporary directory, points the URL at a clone
// of the checkout tagged with VERSION (file://…), builds it in release and runs it; the
// placeholder URL keeps it from building here.
import PackageDescription

let package = Package(
    name: "activerecord-consumer",
    dependencies: [
        .package(url: "https://github.com/<owner>/swift-activerecord", from: "0.2.0"),
        // As a server would: its own metrics and tracing backends (here the facades' recording
        // ones), bootstrapped at start-up, which the library then reports to.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
    ],
    targets: [
        .target(name: "CSQLite", path: "Sources/CSQLite"),
        .executableTarget(
            name: "Quickstart",
            dependencies: [
                "CSQLite", .product(name: "ActiveRecord", package: "swift-activerecord"),
                .product(name: "ActiveRecordPostgreSQL", package: "swift-activerecord"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            path: "Sources/Quickstart"
        ),
    ],
    swiftLanguageModes: [.v6]
)
