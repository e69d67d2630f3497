import FluentKit
import Foundation
import Hummingbird
import Logging
import NIOCore

/// Every failure a handler reports: a status, one sentence, and for 422 the errors by field.
struct APIError: Error {
    let status: HTTPResponse.Status
    let message: String
    var errors: [String: [String]]? = nil

    static func badRequest(_ message: String) -> APIError { APIError(status: .badRequest, message: message) }
    static func notFound(_ message: String) -> APIError { APIError(status: .notFound, message: message) }
    static func invalid(_ errors: [String: [String]]) -> APIError {
        APIError(status: .unprocessableContent, message: "validation failed", errors: errors)
    }
}

/// Turns every error into the API's JSON: {"error": "..."} (and "errors" for 422).
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return Self.response(error)
        } catch let error as HTTPError {
            let message: String
            switch error.status {
            case .notFound: message = "no route for \(request.method) \(request.uri.path)"
            case .contentTooLarge: message = "the body is larger than 1 MiB"
            case .methodNotAllowed: message = "\(request.method) is not allowed on \(request.uri.path)"
            default: message = error.body ?? error.status.reasonPhrase
            }
            return Self.response(APIError(status: error.status, message: message))
        } catch let error as any HTTPResponseError {
            // NIO's too-many-bytes error (a body over maxUploadSize) among them.
            let message = error.status == .contentTooLarge ? "the body is larger than 1 MiB" : error.status.reasonPhrase
            return Self.response(APIError(status: error.status, message: message))
        } catch {
            context.logger.error("\(request.method) \(request.uri.path): \(String(reflecting: error))")
            return Self.response(APIError(status: .internalServerError, message: "internal error"))
        }
    }

    static func response(_ error: APIError) -> Response {
        let data = (try? errorEncoder.encode(ErrorJSON(error: error.message, errors: error.errors))) ?? Data()
        return Response(
            status: error.status,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: data))
        )
    }
}

private let errorEncoder: JSONEncoder = {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return encoder
}()

/// A decoding failure in one sentence (400).
func describe(_ error: DecodingError) -> String {
    func path(_ codingPath: [any CodingKey]) -> String {
        var out = ""
        for key in codingPath {
            if let index = key.intValue { out += "[\(index)]" } else { out += (out.isEmpty ? "" : ".") + key.stringValue }
        }
        return out
    }
    func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Int.Type: return "an integer"
        case is Bool.Type: return "true or false"
        case is [NestedPostInput].Type: return "an array"
        default: return "an object"
        }
    }
    switch error {
    case .typeMismatch(let type, let context) where context.codingPath.isEmpty:
        _ = type
        return "the body must be a JSON object"
    case .typeMismatch(let type, let context):
        return "\"\(path(context.codingPath))\" must be \(typeName(type))"
    case .valueNotFound(let type, let context):
        return "\"\(path(context.codingPath))\" must be \(typeName(type))"
    case .keyNotFound(let key, _):
        return "\"\(key.stringValue)\" is missing"
    case .dataCorrupted(let context) where context.codingPath.isEmpty:
        return "the body is not valid JSON"
    case .dataCorrupted(let context):
        return "\"\(path(context.codingPath))\" has an invalid value"
    @unknown default:
        return "the body could not be read"
    }
}
