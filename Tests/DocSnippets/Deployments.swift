// snippet-imports: ActiveRecordPostgreSQL
// What Deployments.md's blocks take as given: the models its retrying block writes.

final class Order: Model { @Column var total: Double = 0 }
final class Stock: Model { @Column var count: Int = 0 }
