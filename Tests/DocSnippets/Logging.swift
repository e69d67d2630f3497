// What Logging.md's blocks take as given.

let db = try! Database(.inMemory)
