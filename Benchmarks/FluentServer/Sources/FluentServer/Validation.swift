import FluentKit
import Foundation

/// Validation errors by JSON field name, as in {"errors": {"name": ["can't be blank"]}}.
struct Errors {
    private(set) var byField: [String: [String]] = [:]
    var isEmpty: Bool { byField.isEmpty }
    func has(_ field: String) -> Bool { byField[field] != nil }

    mutating func add(_ field: String, _ message: String) {
        byField[field, default: []].append(message)
    }

    func throwIfAny() throws {
        if !byField.isEmpty { throw APIError.invalid(byField) }
    }
}

extension Author {
    /// name: 1...100 characters after trimming; email: one "@" with text on both sides.
    /// (Uniqueness needs the database: `validateUniqueEmail`.)
    func validate(into errors: inout Errors, prefix: String = "") {
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.isEmpty {
            errors.add(prefix + "name", "can't be blank")
        } else if trimmed.count > 100 {
            errors.add(prefix + "name", "is too long (maximum is 100 characters)")
        }
        if email.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            errors.add(prefix + "email", "can't be blank")
        } else {
            let parts = email.split(separator: "@", omittingEmptySubsequences: false)
            if parts.count != 2 || parts[0].isEmpty || parts[1].isEmpty {
                errors.add(prefix + "email", "is invalid")
            }
        }
    }

    func validateUniqueEmail(on db: any Database, into errors: inout Errors) async throws {
        guard !errors.has("email") else { return }
        var query = Author.query(on: db).filter(\.$email == email)
        if let id { query = query.filter(\.$id != id) }
        if try await query.count() > 0 {
            errors.add("email", "has already been taken")
        }
    }
}

extension Post {
    /// title: 1...200 characters; body ≤ 10,000; score 0...1000.
    func validate(into errors: inout Errors, prefix: String = "") {
        if title.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            errors.add(prefix + "title", "can't be blank")
        } else if title.count > 200 {
            errors.add(prefix + "title", "is too long (maximum is 200 characters)")
        }
        if body.count > 10_000 {
            errors.add(prefix + "body", "is too long (maximum is 10000 characters)")
        }
        if !(0...1000).contains(score) {
            errors.add(prefix + "score", "must be between 0 and 1000")
        }
    }
}
