import ActiveRecord
import Foundation
import Hummingbird

/// An error the API answers with: a status and {"error": "…"}, plus {"errors": {field: […]}}
/// for validation failures (422), keyed by the JSON field names.
struct APIError: Error, Sendable {
    var status: HTTPResponse.Status
    var message: String
    var fieldErrors: [String: [String]]? = nil

    init(_ status: HTTPResponse.Status, _ message: String, fieldErrors: [String: [String]]? = nil) {
        self.status = status
        self.message = message
        self.fieldErrors = fieldErrors
    }

    static let bodyTooLarge = APIError(.contentTooLarge, "the body is larger than \(maximumBodySize) bytes")

    static func notFound(_ what: String, _ id: Int64) -> APIError { APIError(.notFound, "\(what) \(id) does not exist") }

    /// A 422 from validation failures; `prefix` goes before each key ("posts[1].").
    static func validation(_ failures: [ValidationFailure], prefix: String = "") -> APIError {
        var errors: [String: [String]] = [:]
        for failure in failures { errors[prefix + jsonName(failure.property), default: []].append(failure.message) }
        return APIError(.unprocessableContent, "validation failed", fieldErrors: errors)
    }

    /// The JSON name of a property: `title` → `title`, `createdAt` → `created_at`, and a
    /// belongs-to (`author`, whose failures name the relation) → its key, `author_id`.
    static func jsonName(_ property: String) -> String {
        if property == "author" { return "author_id" }
        return property.reduce(into: "") { name, character in
            if character.isUppercase { name += "_" + character.lowercased() } else { name.append(character) }
        }
    }

    /// The error a library error is to a client: validation failures are 422 with their keys,
    /// a post pointing at an author deleted meanwhile (the foreign key, at commit) is the
    /// same 422 as an author that never existed; a value the engine cannot store is a 400;
    /// a database that is busy or slow is 503;
    /// anything else is a 500 that says no more (the log has the details).
    init(_ error: ActiveRecordError) {
        if error.code == .validationFailed {
            self = .validation(error.validationFailures)
        } else if error.code == .constraint && error.isForeignKeyViolation {
            self = APIError(.unprocessableContent, "validation failed", fieldErrors: ["author_id": ["does not exist"]])
        } else if error.code == .invalidValue {
            self = APIError(.badRequest, "a value in the request cannot be stored")
        } else if error.code == .busy || error.code == .timeout {
            self = APIError(.serviceUnavailable, "the database is busy: try again")
        } else {
            self = APIError(.internalServerError, "internal error")
        }
    }

    private struct Body: Encodable {
        var error: String
        var errors: [String: [String]]?
    }

    /// The response: JSON, with the status.
    var response: Response {
        jsonResponse(Body(error: message, errors: fieldErrors), status: status)
    }
}

/// `value` as a JSON response.
func jsonResponse(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    // Encoding these plain structs cannot fail (no floats that are not finite, no throwing encode).
    let data = (try? encoder.encode(value)) ?? Data(#"{"error":"internal error"}"#.utf8)
    return Response(
        status: status, headers: [.contentType: "application/json; charset=utf-8"],
        body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
}

/// Turns every error into the API's JSON: ours, the library's, Hummingbird's (404 for an
/// unknown route, 405, 413), and anything else as a 500.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return error.response
        } catch let error as ActiveRecordError {
            let apiError = APIError(error)
            if apiError.status == .internalServerError {
                context.logger.error("\(request.method) \(request.uri.path): \(error)")
            }
            return apiError.response
        } catch let error as HTTPError {
            let message = error.body ?? (error.status == .notFound ? "no route for \(request.method) \(request.uri.path)" : error.status.reasonPhrase)
            return APIError(error.status, message).response
        } catch let error as any HTTPResponseError {
            return (error.status == .contentTooLarge ? APIError.bodyTooLarge : APIError(error.status, error.status.reasonPhrase)).response
        } catch {
            context.logger.error("\(request.method) \(request.uri.path): \(error)")
            return APIError(.internalServerError, "internal error").response
        }
    }
}
