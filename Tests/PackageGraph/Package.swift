// swift-tools-version: 6.3
// A user's package, as a new user would write it: its own executable `Quickstart` and its
// own C target `CSQLite` (the generic names many packages use), depending on
// swift-activerecord by path. SwiftPM requires target names to be unique across every
// package of a program, so this resolves only if the library's targets have names of its
// own. `make package-graph` (part of `make test`) builds and runs it.
import PackageDescription

let package = Package(
    name: "activerecord-consumer",
    dependencies: [.package(name: "swift-activerecord", path: "../..")],
    targets: [
        .target(name: "CSQLite", path: "Sources/CSQLite"),
        .executableTarget(
            name: "Quickstart",
            dependencies: ["CSQLite", .product(name: "ActiveRecord", package: "swift-activerecord")],
            path: "Sources/Quickstart"
        ),
    ],
    swiftLanguageModes: [.v6]
)
