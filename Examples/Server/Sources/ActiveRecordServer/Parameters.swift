import Hummingbird

/// The query string of a list route, read strictly: a parameter given twice or with a value
/// of the wrong kind is a 400 naming it. Parameters the route does not know are ignored.
struct ListParameters {
    private let values: [Substring: [Substring]]

    init(_ request: Request) {
        var values: [Substring: [Substring]] = [:]
        for (key, value) in request.uri.queryParameters { values[key, default: []].append(value) }
        self.values = values
    }

    /// The parameter's one value, or `nil`.
    func value(_ name: String) throws -> Substring? {
        guard let given = values[Substring(name)] else { return nil }
        guard given.count == 1 else { throw APIError(.badRequest, "query parameter \(name) is given \(given.count) times") }
        return given[0]
    }

    /// An integer parameter in `range`, or `nil` when absent.
    func integer(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let text = try value(name) else { return nil }
        guard let number = Int(text), range.contains(number) else {
            throw APIError(.badRequest, "query parameter \(name) must be an integer in \(range.lowerBound)...\(range.upperBound), not \"\(text)\"")
        }
        return number
    }

    /// An id parameter (a positive 64-bit integer), or `nil` when absent.
    func id(_ name: String) throws -> Int64? {
        guard let text = try value(name) else { return nil }
        guard let id = Int64(text), id > 0 else { throw APIError(.badRequest, "query parameter \(name) must be a positive integer id, not \"\(text)\"") }
        return id
    }

    /// `true` or `false`, or `nil` when absent.
    func bool(_ name: String) throws -> Bool? {
        guard let text = try value(name) else { return nil }
        switch text {
        case "true": return true
        case "false": return false
        default: throw APIError(.badRequest, "query parameter \(name) must be true or false, not \"\(text)\"")
        }
    }

    /// `page` (≥ 1, default 1) and `per` (1...100, default 20), and the rows they skip.
    func paging() throws -> (page: Int, per: Int, offset: Int) {
        let per = try integer("per", in: 1...100) ?? 20
        // The page's first row must be a number the database can take (no overflow).
        let page = try integer("page", in: 1...(Int(Int32.max) / 100)) ?? 1
        return (page, per, (page - 1) * per)
    }
}

extension Parameters {
    /// The `:id` of the path: a positive 64-bit integer, else a 400.
    func id() throws -> Int64 {
        let text = get("id") ?? ""
        guard let id = Int64(text), id > 0 else { throw APIError(.badRequest, "the id in the path must be a positive integer, not \"\(text)\"") }
        return id
    }
}
