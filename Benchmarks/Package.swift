// swift-tools-version: 6.1
// The release benchmark: ActiveRecord against the raw sqlite3 C API, in one process.
//   swift build -c release --product ARBench && .build/release/ARBench [N]
import PackageDescription

let package = Package(
    name: "ARBench",
    dependencies: [
        .package(name: "swift-activerecord", path: ".."),
    ],
    targets: [
        // The system sqlite3, for the raw side (its own module, so the
        // benchmark does not reach into the library's CSQLite target).
        .systemLibrary(
            name: "CSQLiteRaw",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev", "pkg-config"])]
        ),
        .executableTarget(
            name: "ARBench",
            dependencies: [
                "CSQLiteRaw",
                .product(name: "ActiveRecord", package: "swift-activerecord"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
