// expect-error: type 'Note' has no member 'lazyFetcher'
// The seeds' names live in the map to this API (MigratingFromIActiveRecord.md), not in aliases.
import ActiveRecord

final class Note: Model {
    @Column var text: String = ""
}

let notes = Note.lazyFetcher()
