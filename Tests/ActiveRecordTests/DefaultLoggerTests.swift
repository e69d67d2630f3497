@_spi(Engines) import ARCore
import ActiveRecord
import Foundation
import Testing

/// Issue 31, point 9: a program that configures no logging prints nothing on success.
@Suite("The default logger is quiet on success")
struct DefaultLoggerTests {
    /// Runs the child's quiet migration (the library's defaults, no `LoggingSystem.bootstrap`:
    /// swift-log's handler prints from `.info` to standard error), returning what it printed
    /// and what it logged.
    private func quietMigration(_ extra: [String]) throws -> (status: Int32, printed: String, logged: String) {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = Process()
        process.executableURL = QuickstartTests.productsDirectory.appendingPathComponent("ActiveRecordStressChild")
        process.arguments = ["quiet-migration", directory.appendingPathComponent("app.sqlite").path] + extra
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let logged = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, printed, logged)
    }

    /// A migration step runs: nothing on standard error (it used to print the step at `.info`).
    @Test func aProgramThatConfiguresNothingPrintsNothingWhenAMigrationRuns() throws {
        let run = try quietMigration([])
        #expect(run.status == 0, "\(run.printed) \(run.logged)")
        #expect(run.printed == "applied: [\"rename Renamed.body to text\"]\n")
        #expect(run.logged == "")
    }

    /// Warnings still reach it: drift automatic migration leaves alone, but not the step.
    @Test func warningsStillReachTheDefaultLogger() throws {
        let run = try quietMigration(["drift"])
        #expect(run.status == 0, "\(run.printed) \(run.logged)")
        #expect(run.logged.contains("warning") && run.logged.contains("schema drift"), "\(run.logged)")
        #expect(!run.logged.contains("migration 'rename Renamed.body to text' applied"), "\(run.logged)")
    }
}
