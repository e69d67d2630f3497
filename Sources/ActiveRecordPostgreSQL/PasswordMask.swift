@_spi(Engines) import ARCore
/// The passwords a connection string holds, and the one way text that libpq or the library
/// writes about it is shown: with every password replaced by `***`.
///
/// libpq's own messages quote what they could not read — `invalid percent-encoded token:
/// "Sekr1t%ZZ"`, or a whole URL with an unclosed `[` — so its text never reaches an error, a
/// log line or a description without going through ``mask(_:)``. The passwords are found
/// without libpq (which cannot read a malformed string), generously: in a URL, the userinfo's
/// password as libpq reads it and, in case an unencoded `@` or `/` misleads it, everything
/// between the first `:` of the userinfo and the last `@`; `password=` in the query (its key
/// percent-decoded too); in `key=value` pairs, `password`'s value, quoted or not (and those
/// of a `dbname` that is itself a connection string). Each is masked as written, decoded and
/// unescaped, and so is any quoted token of a message taken from the string where it overlaps
/// one (libpq misreading `ar:Sek/r1t@host` quotes the port, `"Sek"`). Masking more than the
/// password is harmless; showing any of it is not.
struct PasswordMask: Sendable {
    /// The connection string as given, and its bytes.
    private let connection: String
    private let bytes: [UInt8]
    /// Where the passwords are in ``bytes``.
    private let spans: [Range<Int>]
    /// The connection string with its passwords masked.
    let maskedConnection: String
    /// The passwords in every form found (as written, decoded), longest first.
    private let secrets: [String]

    init(_ connection: String) {
        self.connection = connection
        let bytes = Array(connection.utf8)
        self.bytes = bytes
        var found = Found()
        found.scan(bytes)
        spans = found.spans.sorted { $0.lowerBound < $1.lowerBound }
        let secrets = found.secrets.filter { !$0.isEmpty }.sorted { $0.utf8.count > $1.utf8.count }
        self.secrets = secrets
        var masked = ""
        var position = 0
        for span in spans where span.upperBound > position {
            let start = max(span.lowerBound, position)
            masked += String(decoding: bytes[position..<start], as: UTF8.self) + "***"
            position = span.upperBound
        }
        masked += String(decoding: bytes[position...], as: UTF8.self)
        maskedConnection = Self.replacing(secrets, in: masked)
    }

    /// `text` with the connection string shown masked, every quoted token (`"…"`) that
    /// touches a password masked (``maskToken(_:)``), and every other occurrence of a password
    /// of three characters or more masked.
    func mask(_ text: String) -> String {
        guard !spans.isEmpty else { return text }
        var result = connection.isEmpty ? text : text.replacing(connection, with: maskedConnection)
        let parts = result.split(separator: "\"", omittingEmptySubsequences: false)
        if parts.count > 2 {
            result = ""
            for (index, part) in parts.enumerated() {
                if index > 0 { result += "\"" }
                let isQuoted = index % 2 == 1 && index < parts.count - 1
                result += isQuoted ? maskToken(String(part)) : String(part)
            }
        }
        return Self.replacing(secrets, in: result)
    }

    /// `***` for a piece of text taken from the connection string (a value libpq quotes, a
    /// host or port it read) that may show a password: one that holds a password, or that
    /// the string holds only where a password is (libpq misreading `ar:Sek/r1t@host` reads
    /// the port `Sek`), or, found nowhere in the string, is part of a password (decoded).
    /// Text also found outside the passwords (a port `1` beside a password `Sekr1t`) stays.
    func maskToken(_ token: String) -> String {
        guard !spans.isEmpty, !token.isEmpty else { return token }
        if secrets.contains(where: { token.contains($0) }) { return "***" }
        let needle = Array(token.utf8)
        var found = false
        if needle.count <= bytes.count {
            for start in 0...(bytes.count - needle.count) where bytes[start..<(start + needle.count)].elementsEqual(needle) {
                let occurrence = start..<(start + needle.count)
                if !spans.contains(where: { $0.overlaps(occurrence) }) { return token }
                found = true
            }
        }
        return found || secrets.contains(where: { $0.contains(token) }) ? "***" : token
    }

    /// `text` with every secret of three characters or more masked (shorter ones would mask
    /// letters of ordinary words: they are masked as tokens only).
    private static func replacing(_ secrets: [String], in text: String) -> String {
        var result = text
        for secret in secrets where secret.utf8.count >= 3 && result.contains(secret) {
            result = result.replacing(secret, with: "***")
        }
        return result
    }
}

/// What a scan of a connection string found: the byte ranges to mask in it, and the
/// passwords' forms to mask in messages.
private struct Found {
    var spans: [Range<Int>] = []
    var secrets: Set<String> = []

    mutating func scan(_ bytes: [UInt8]) {
        if let start = Self.uriStart(bytes) { scanURI(bytes, from: start) } else { scanPairs(bytes) }
    }

    /// Where a `postgresql://` or `postgres://` URL's text after the scheme starts.
    static func uriStart(_ bytes: [UInt8]) -> Int? {
        for scheme in ["postgresql://", "postgres://"] {
            let prefix = Array(scheme.utf8)
            if bytes.count >= prefix.count, zip(bytes, prefix).allSatisfy({ lowercased($0) == $1 }) { return prefix.count }
        }
        return nil
    }

    private mutating func add(_ bytes: [UInt8], _ span: Range<Int>, decode: (ArraySlice<UInt8>) -> [UInt8]) {
        guard !span.isEmpty else { return }
        spans.append(span)
        secrets.insert(String(decoding: bytes[span], as: UTF8.self))
        secrets.insert(String(decoding: decode(bytes[span]), as: UTF8.self))
    }

    private mutating func scanURI(_ bytes: [UInt8], from start: Int) {
        let at = UInt8(ascii: "@"), colon = UInt8(ascii: ":"), slash = UInt8(ascii: "/"), question = UInt8(ascii: "?")
        // As libpq reads it: the userinfo ends at an `@` met before any `/`.
        let designator = bytes[start...].firstIndex { $0 == at || $0 == slash }
        if let designator, bytes[designator] == at, let separator = bytes[start..<designator].firstIndex(of: colon) {
            add(bytes, (separator + 1)..<designator, decode: percentDecoded)
        }
        // As a reader may have meant it: up to the last `@`.
        if let last = bytes[start...].lastIndex(of: at), let separator = bytes[start..<last].firstIndex(of: colon) {
            add(bytes, (separator + 1)..<last, decode: percentDecoded)
        }
        // `password=` in the query (libpq decodes the keys too).
        var index = start
        while let query = bytes[index...].firstIndex(of: question) {
            var parameter = query + 1
            while parameter < bytes.count {
                let end = bytes[parameter...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.count
                if let equals = bytes[parameter..<end].firstIndex(of: UInt8(ascii: "=")),
                   percentDecoded(bytes[parameter..<equals]).map(Found.lowercased) == Array("password".utf8) {
                    add(bytes, (equals + 1)..<end, decode: percentDecoded)
                }
                parameter = end + 1
            }
            index = query + 1
        }
    }

    /// `key = value` pairs as libpq reads them: a value is quoted with `'` (backslash escapes
    /// `'` and `\`) or runs to the next white space. A `dbname` value may itself be a
    /// connection string: its passwords are found too.
    private mutating func scanPairs(_ bytes: [UInt8]) {
        var index = 0
        func skipSpace() { while index < bytes.count, isSpace(bytes[index]) { index += 1 } }
        while true {
            skipSpace()
            guard index < bytes.count else { return }
            let keyStart = index
            while index < bytes.count, !isSpace(bytes[index]), bytes[index] != UInt8(ascii: "=") { index += 1 }
            let key = String(decoding: bytes[keyStart..<index], as: UTF8.self)
            skipSpace()
            // A word without `=` (libpq refuses the string): go on looking for passwords.
            guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else { continue }
            index += 1
            skipSpace()
            var value: Range<Int>
            if index < bytes.count, bytes[index] == UInt8(ascii: "'") {
                index += 1
                let valueStart = index
                while index < bytes.count, bytes[index] != UInt8(ascii: "'") {
                    index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                }
                index = min(index, bytes.count)
                value = valueStart..<index
                if index < bytes.count { index += 1 }
            } else {
                let valueStart = index
                while index < bytes.count, !isSpace(bytes[index]) {
                    index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                }
                index = min(index, bytes.count)
                value = valueStart..<index
            }
            switch key.lowercased() {
            case "password":
                add(bytes, value, decode: unescaped)
            case "dbname":
                let inner = unescaped(bytes[value])
                var nested = Found()
                nested.scan(inner)
                guard !nested.secrets.isEmpty else { break }
                spans.append(value)
                secrets.formUnion(nested.secrets)
            default:
                break
            }
        }
    }

    static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }
}

private func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }

/// `%XX` sequences decoded; a malformed one is kept as written.
private func percentDecoded(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
    func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
    var result: [UInt8] = []
    var index = bytes.startIndex
    while index < bytes.endIndex {
        if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.endIndex,
           let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2]) {
            result.append(high << 4 | low)
            index += 3
        } else {
            result.append(bytes[index])
            index += 1
        }
    }
    return result
}

/// A `key=value` value with its backslash escapes removed.
private func unescaped(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
    var result: [UInt8] = []
    var escaping = false
    for byte in bytes {
        if !escaping, byte == UInt8(ascii: "\\") {
            escaping = true
        } else {
            result.append(byte)
            escaping = false
        }
    }
    return result
}
