@_spi(Engines) import ARCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A page cursor as data for a client: `Codable` (each value tagged with its type, so that it
/// comes back as it went), and as one opaque string, ``token`` (base64url of that JSON).
///
/// ```swift
/// // The server sends page.nextCursor?.token; the client sends it back for the next page:
/// let cursor = try tokenFromClient.map { try PageCursor(token: $0) }
/// let page = try User.query().order(by: \.age).page(size: 20, after: cursor)
/// ```
/// A cursor from a client is data, never SQL: its values are bound like every value, so a
/// tampered one can only name another place to start (or be refused: a malformed token, or a
/// number of values that is not the query's number of order keys, throw `.invalidValue`).
extension PageCursor: Codable {
    private enum Tag: String, CodingKey { case null = "n", integer = "i", real = "r", text = "t", blob = "b" }

    /// One value as `{"i": 3}`, `{"t": "x"}`, `{"r": 1.5}`, `{"b": "<base64>"}` or `{"n": true}`.
    private struct Tagged: Codable {
        let value: DatabaseValue
        /// JSON has no infinities or NaN: they are spelled as strings.
        static let nonFinite: [(Double, String)] = [(.infinity, "inf"), (-.infinity, "-inf"), (.nan, "nan")]

        init(_ value: DatabaseValue) { self.value = value }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Tag.self)
            guard container.allKeys.count == 1, let tag = container.allKeys.first else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "one tagged value"))
            }
            switch tag {
            case .null: value = .null
            case .integer: value = .integer(try container.decode(Int64.self, forKey: tag))
            case .real:
                if let double = try? container.decode(Double.self, forKey: tag) {
                    value = .real(double)
                } else {
                    let spelled = try container.decode(String.self, forKey: tag)
                    guard let double = Self.nonFinite.first(where: { $0.1 == spelled })?.0 else {
                        throw DecodingError.dataCorruptedError(forKey: tag, in: container, debugDescription: "not a real")
                    }
                    value = .real(double)
                }
            case .text: value = .text(try container.decode(String.self, forKey: tag))
            case .blob: value = .blob(try container.decode(Data.self, forKey: tag))
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Tag.self)
            switch value {
            case .null: try container.encode(true, forKey: .null)
            case .integer(let int): try container.encode(int, forKey: .integer)
            case .real(let double) where double.isFinite: try container.encode(double, forKey: .real)
            case .real(let double): try container.encode(double.isNaN ? "nan" : double < 0 ? "-inf" : "inf", forKey: .real)
            case .text(let text): try container.encode(text, forKey: .text)
            case .blob(let data): try container.encode(data, forKey: .blob)
            }
        }
    }

    public init(from decoder: any Decoder) throws {
        self.init(values: try decoder.singleValueContainer().decode([Tagged].self).map(\.value))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(values.map(Tagged.init))
    }

    /// The cursor as one opaque, URL-safe string (base64url of its JSON, no padding), for a
    /// client to send back as it got it: `PageCursor(token:)` reads it.
    ///
    /// ```swift
    /// let next = page.nextCursor?.token    // "W3siaSI6MzB9LHsiaSI6MTd9XQ"
    /// ```
    public var token: String {
        // Tagged values of every storage class always encode (non-finite reals as strings).
        let data = (try? JSONEncoder().encode(self)) ?? Data("[]".utf8)
        return data.base64EncodedString()
            .replacing("+", with: "-").replacing("/", with: "_")
            .replacing("=", with: "")
    }

    /// The cursor a ``token`` spelled.
    ///
    /// ```swift
    /// let cursor = try PageCursor(token: request.query["after"] ?? "")
    /// ```
    /// - Throws: `.invalidValue` when `token` is not one that ``token`` gave (not base64url,
    ///   or not a cursor's JSON): a client's mistake or tampering, to answer with a bad request.
    public init(token: String) throws {
        var base64 = token.replacing("-", with: "+").replacing("_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard token.count <= 1 << 16, let data = Data(base64Encoded: base64),
              let cursor = try? JSONDecoder().decode(PageCursor.self, from: data) else {
            throw ActiveRecordError(
                .invalidValue,
                "the page cursor token is malformed (\(token.count) characters): pass back, unchanged, a token that "
                    + "PageCursor.token gave (page(size:after:)'s nextCursor?.token)")
        }
        self = cursor
    }
}
