/// A list that holds its first element in place and the others in an array: what a query
/// keeps of its conditions, orderings and a condition's arguments, which are most often one.
/// A list of one then makes no array, so that a query built and run in a loop allocates
/// (and frees) none for them.
///
/// The first element is stored as itself, not as an optional (an empty list holds the
/// element type's ``InlineListElement/vacant``): reading it then borrows it where it is,
/// where unwrapping an optional would copy it (retaining what it holds) on every read.
/// Elements are only appended: the array holds elements only when the first one is there.
struct InlineList<Element: InlineListElement> {
    private var head: Element
    private var tail: [Element]
    private var hasHead: Bool

    /// An empty list.
    init() {
        head = Element.vacant
        tail = []
        hasHead = false
    }

    /// A list of one element.
    init(_ element: Element) {
        head = element
        tail = []
        hasHead = true
    }

    /// A list of `first`, then `rest` (an array made from a literal: appending to an empty
    /// array grows it through the standard library's unspecialised path).
    init(_ first: Element, _ rest: [Element]) {
        head = first
        tail = rest
        hasHead = true
    }

    /// A list of `elements`, in order.
    init(_ elements: some Sequence<Element>) {
        self.init()
        for element in elements { append(element) }
    }

    /// Adds `element` at the end.
    mutating func append(_ element: Element) {
        if hasHead {
            tail.append(element)
        } else {
            head = element
            hasHead = true
        }
    }
}

/// An element of an ``InlineList``: a value an empty list holds in place of its first
/// element, which allocates nothing and is never read as an element.
protocol InlineListElement {
    static var vacant: Self { get }
}

extension InlineList: RandomAccessCollection {
    var startIndex: Int { 0 }
    var endIndex: Int { hasHead ? 1 + tail.count : 0 }
    var count: Int { endIndex }
    var isEmpty: Bool { !hasHead }

    /// A copy of the element (a getter: a `_read` accessor is a coroutine, which allocates
    /// its frame on the heap when it is called rather than inlined). Hot paths read in
    /// place with ``withElement(at:_:)``.
    subscript(position: Int) -> Element {
        if position == 0 {
            precondition(hasHead, "index out of range")
            return head
        }
        return tail[position - 1]
    }

    /// Whether `body` holds for each element, passed in place, and the element of `others`
    /// at its position, starting at `others[start]` (`others` holds at least `start + count`).
    @inline(__always)
    func allPair<Other>(with others: [Other], from start: Int = 0, _ body: (Element, Other) -> Bool) -> Bool {
        guard hasHead else { return true }
        guard body(head, others[start]) else { return false }
        for index in tail.indices where !body(tail[index], others[start + 1 + index]) { return false }
        return true
    }

    /// `body` called with the element at `position`, passed in place (borrowed, not copied).
    @inline(__always)
    func withElement<Result>(at position: Int, _ body: (Element) throws -> Result) rethrows -> Result {
        if position == 0 {
            assert(hasHead, "index out of range")
            return try body(head)
        }
        return try body(tail[position - 1])
    }
}

extension InlineList: Equatable where Element: Equatable {
    static func == (lhs: InlineList, rhs: InlineList) -> Bool {
        lhs.count == rhs.count && (!lhs.hasHead || lhs.head == rhs.head) && lhs.tail == rhs.tail
    }
}

extension InlineList: Hashable where Element: Hashable {
    func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        for element in self { hasher.combine(element) }
    }
}
