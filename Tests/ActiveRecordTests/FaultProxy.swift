@_spi(Engines) import ARCore
import Foundation
import Testing

/// A TCP proxy on 127.0.0.1 (an ephemeral port) in front of the test server's Unix socket,
/// which injects the faults a network and a stopped server cause, for the timeout tests:
/// - ``Mode/silent``: it accepts connections and never answers (a server whose process is
///   stopped while its kernel still accepts);
/// - ``freeze()``: no byte passes either way until ``unfreeze()`` (a stopped server, or a
///   partition where the peer's kernel still acknowledges);
/// - ``dropOnCommit``: a connection whose client sends bytes holding `COMMIT` is cut right
///   after they are passed on (the COMMIT's answer never comes back).
///
/// One thread polls every socket; ``stop()`` (or the end of ``with(_:_:)``) ends it and closes
/// the listener and every connection, whatever happened.
final class FaultProxy: @unchecked Sendable {
    // @unchecked Sendable: `flags` is behind a lock; the sockets belong to the polling thread,
    // and `listener` is closed by it too.
    enum Mode { case forward, silent }

    /// The port clients connect to, on 127.0.0.1.
    let port: UInt16
    private let listener: Int32
    private let mode: Mode
    private let upstream: String
    private let flags = Mutex(Flags())
    private let finished = DispatchSemaphore(value: 0)

    private struct Flags {
        var frozen = false
        var dropOnCommit = false
        var dropAll = false
        var stopping = false
        var accepted = 0
    }

    /// Starts a proxy to the Unix socket at `upstream` (the test server's, by default).
    init(_ mode: Mode = .forward, upstream: String = FaultProxy.serverSocket) throws {
        self.mode = mode
        self.upstream = upstream
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw ProxyError("socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(listener, address, length) == 0 && listen(listener, 16) == 0 && getsockname(listener, address, &length) == 0
            }
        }
        guard bound else {
            close(listener)
            throw ProxyError("bind/listen on 127.0.0.1: \(errno)")
        }
        self.listener = listener
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in run() }
        thread.name = "FaultProxy"
        thread.start()
    }

    deinit { stop() }

    /// Runs `body` with a proxy, stopped afterwards whatever happens.
    static func with<R>(_ mode: Mode = .forward, _ body: (FaultProxy) throws -> R) throws -> R {
        let proxy = try FaultProxy(mode)
        defer { proxy.stop() }
        return try body(proxy)
    }

    /// The test server's socket: `<host directory>/.s.PGSQL.5432` from AR_TEST_POSTGRES.
    static var serverSocket: String {
        let host = (TestEngine.postgresConnection ?? "").split(separator: " ").first { $0.hasPrefix("host=") }
        return String(host?.dropFirst("host=".count) ?? "/tmp") + "/.s.PGSQL.5432"
    }

    /// A `key=value` connection string to the server through this proxy (over TCP).
    func connection(schema: String? = nil, extra: String = "") -> String {
        var text = "host=127.0.0.1 port=\(port) user=ar dbname=postgres \(extra)"
        if let schema { text += " options='-csearch_path=\(schema)'" }
        return text
    }

    /// How many connections the proxy accepted so far.
    var accepted: Int { flags.withLock { $0.accepted } }

    /// No byte passes either way until ``unfreeze()``.
    func freeze() { flags.withLock { $0.frozen = true } }
    func unfreeze() { flags.withLock { $0.frozen = false } }
    /// Whether a connection whose client sends `COMMIT` is cut after passing it on.
    var dropOnCommit: Bool {
        get { flags.withLock { $0.dropOnCommit } }
        set { flags.withLock { $0.dropOnCommit = newValue } }
    }
    /// Cuts every open connection (once).
    func dropAll() { flags.withLock { $0.dropAll = true } }

    /// Ends the polling thread and closes every socket; then returns. Stopping twice is fine.
    func stop() {
        let first = flags.withLock { flags in
            defer { flags.stopping = true }
            return !flags.stopping
        }
        if first { finished.wait() }
    }

    // MARK: The polling thread

    private struct Pair {
        var client: Int32
        var server: Int32  // -1: none (silent)
    }

    private func run() {
        var pairs: [Pair] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        defer {
            for pair in pairs { closePair(pair) }
            close(listener)
            finished.signal()
        }
        while true {
            let state = flags.withLock { flags in
                defer { flags.dropAll = false }
                return flags
            }
            if state.stopping { return }
            if state.dropAll {
                pairs.forEach(closePair)
                pairs.removeAll()
            }
            var descriptors = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            if !state.frozen {
                for pair in pairs {
                    descriptors.append(pollfd(fd: pair.client, events: Int16(POLLIN), revents: 0))
                    if pair.server >= 0 { descriptors.append(pollfd(fd: pair.server, events: Int16(POLLIN), revents: 0)) }
                }
            }
            guard poll(&descriptors, nfds_t(descriptors.count), 20) > 0 else { continue }
            if descriptors[0].revents != 0 { accept(into: &pairs) }
            guard !state.frozen else { continue }
            var closed: Set<Int32> = []
            for descriptor in descriptors.dropFirst() where descriptor.revents != 0 {
                guard let index = pairs.firstIndex(where: { $0.client == descriptor.fd || $0.server == descriptor.fd }),
                      !closed.contains(pairs[index].client) else { continue }
                let pair = pairs[index]
                let fromClient = descriptor.fd == pair.client
                let count = read(descriptor.fd, &buffer, buffer.count)
                var keep = count > 0
                if keep, fromClient, pair.server >= 0 {
                    keep = writeAll(pair.server, buffer, count)
                    if keep, state.dropOnCommit, contains(buffer, count, "COMMIT") { keep = false }
                } else if keep, !fromClient {
                    keep = writeAll(pair.client, buffer, count)
                }
                if !keep {
                    closePair(pair)
                    closed.insert(pair.client)
                }
            }
            pairs.removeAll { closed.contains($0.client) }
        }
    }

    private func accept(into pairs: inout [Pair]) {
        let client = Glibc.accept(listener, nil, nil)
        guard client >= 0 else { return }
        flags.withLock { $0.accepted += 1 }
        guard mode == .forward else { return pairs.append(Pair(client: client, server: -1)) }
        let server = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array(upstream.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            for (index, byte) in path.prefix(bytes.count - 1).enumerated() { bytes[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(server, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
        guard server >= 0, connected else {
            if server >= 0 { close(server) }
            close(client)
            return
        }
        pairs.append(Pair(client: client, server: server))
    }

    private func closePair(_ pair: Pair) {
        close(pair.client)
        if pair.server >= 0 { close(pair.server) }
    }

    private func writeAll(_ descriptor: Int32, _ buffer: [UInt8], _ count: Int) -> Bool {
        var written = 0
        while written < count {
            let result = buffer.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, count - written) }
            if result < 0, errno == EINTR { continue }
            guard result > 0 else { return false }
            written += result
        }
        return true
    }

    private func contains(_ buffer: [UInt8], _ count: Int, _ text: String) -> Bool {
        let needle = Array(text.utf8)
        guard count >= needle.count else { return false }
        return (0...(count - needle.count)).contains { start in buffer[start..<(start + needle.count)].elementsEqual(needle) }
    }

    struct ProxyError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
