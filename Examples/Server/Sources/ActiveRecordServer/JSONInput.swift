import Foundation
import Hummingbird

/// A JSON value as the client sent it, so that the API can tell its types apart itself and
/// answer every mistake with a 400 that names the field: unknown fields, `null`, a string
/// where a number belongs.
enum JSONValue: Decodable, Sendable {
    case null, bool(Bool), integer(Int64), number(Double), string(String), array([JSONValue]), object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let value = try? container.decode(Bool.self) { self = .bool(value) }
        else if let value = try? container.decode(Int64.self) { self = .integer(value) }
        else if let value = try? container.decode(Double.self) { self = .number(value) }
        else if let value = try? container.decode(String.self) { self = .string(value) }
        else if let value = try? container.decode([JSONValue].self) { self = .array(value) }
        else { self = .object(try container.decode([String: JSONValue].self)) }
    }

    /// What the value is, for messages: "a string", "null".
    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .integer, .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// A JSON object whose fields the route reads by type; `path` names it in messages
/// ("" for the body, "posts[1]" for an element).
struct JSONObject {
    let fields: [String: JSONValue]
    let path: String

    /// The object `value` is, holding no field but `allowed` (else a 400 naming the first
    /// unknown field, in sorted order).
    init(_ value: JSONValue, path: String = "", allowed: Set<String>) throws {
        guard case .object(let fields) = value else {
            throw APIError(.badRequest, path.isEmpty
                ? "the body must be a JSON object, not \(value.kind)" : "\(path) must be a JSON object, not \(value.kind)")
        }
        if let unknown = fields.keys.filter({ !allowed.contains($0) }).sorted().first {
            throw APIError(.badRequest, "unknown field \"\(path.isEmpty ? unknown : "\(path).\(unknown)")\"")
        }
        self.fields = fields
        self.path = path
    }

    /// The field's full name in messages.
    private func name(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    private func mismatch(_ key: String, _ expected: String, _ value: JSONValue) -> APIError {
        APIError(.badRequest, "field \"\(name(key))\" must be \(expected), not \(value.kind)")
    }

    /// A string field; `nil` when absent. `null` is a wrong type, as any other. A NUL
    /// character is refused on every engine (PostgreSQL's text cannot hold one).
    func string(_ key: String) throws -> String? {
        switch fields[key] {
        case nil: return nil
        case .string(let value):
            guard !value.unicodeScalars.contains("\u{0}") else {
                throw APIError(.badRequest, "field \"\(name(key))\" must not contain a NUL character (\\u0000)")
            }
            return value
        case let other?: throw mismatch(key, "a string", other)
        }
    }

    /// An integer field within `Int`; `nil` when absent.
    func integer(_ key: String) throws -> Int? {
        switch fields[key] {
        case nil: return nil
        case .integer(let value):
            guard let value = Int(exactly: value) else { throw mismatch(key, "an integer", .number(Double(value))) }
            return value
        case let other?: throw mismatch(key, "an integer", other)
        }
    }

    /// An id field (a 64-bit integer); `nil` when absent.
    func id(_ key: String) throws -> Int64? {
        switch fields[key] {
        case nil: return nil
        case .integer(let value): return value
        case let other?: throw mismatch(key, "an integer id", other)
        }
    }

    /// A boolean field; `nil` when absent.
    func bool(_ key: String) throws -> Bool? {
        switch fields[key] {
        case nil: return nil
        case .bool(let value): return value
        case let other?: throw mismatch(key, "true or false", other)
        }
    }

    /// An array field; `nil` when absent.
    func array(_ key: String) throws -> [JSONValue]? {
        switch fields[key] {
        case nil: return nil
        case .array(let value): return value
        case let other?: throw mismatch(key, "an array", other)
        }
    }
}

/// The largest body a route reads: more is a 413.
let maximumBodySize = 1 << 20

extension Request {
    /// The body as a JSON object with only `allowed` fields: 415 unless the body is declared
    /// JSON, 413 beyond ``maximumBodySize``, 400 when it is empty, malformed or not an object.
    mutating func jsonObject(allowed: Set<String>) async throws -> JSONObject {
        let contentType = headers[.contentType] ?? ""
        let mediaType = contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard mediaType == "application/json" else {
            throw APIError(.unsupportedMediaType, contentType.isEmpty
                ? "the body must be JSON, sent with Content-Type: application/json"
                : "the body must be JSON (Content-Type: application/json), not \(contentType)")
        }
        if let length = headers[.contentLength].flatMap(Int.init), length > maximumBodySize {
            throw APIError.bodyTooLarge
        }
        let buffer: ByteBuffer
        do {
            buffer = try await collectBody(upTo: maximumBodySize)
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            throw APIError.bodyTooLarge
        }
        guard buffer.readableBytes > 0 else { throw APIError(.badRequest, "the body is empty: send a JSON object") }
        let value: JSONValue
        do {
            value = try JSONDecoder().decode(JSONValue.self, from: Data(buffer.readableBytesView))
        } catch {
            throw APIError(.badRequest, "the body is not valid JSON")
        }
        return try JSONObject(value, allowed: allowed)
    }
}
