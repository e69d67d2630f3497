// swift-tools-version: 6.3
// The server example (issue 33): a JSON REST API over Hummingbird 2, on SQLite by default and
// on PostgreSQL by URL. Its own package, so that Hummingbird and SwiftNIO never reach the
// library's package graph: the library is a dependency by path.
//
//     make serve          (from the repository's root) builds and runs it on 127.0.0.1:8080
//     make test-server    drives every route with real HTTP requests, on both engines
import PackageDescription

let package = Package(
    name: "activerecord-server-example",
    platforms: [.macOS(.v15)],
    dependencies: [
        // The folder's name may be anything (a clone, a worktree): `name:` gives the package the
        // identity the products below refer to.
        .package(name: "swift-activerecord", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "ActiveRecordServer",
            dependencies: [
                .product(name: "ActiveRecord", package: "swift-activerecord"),
                .product(name: "ActiveRecordPostgreSQL", package: "swift-activerecord"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
