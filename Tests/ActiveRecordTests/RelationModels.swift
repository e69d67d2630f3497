@_spi(Engines) import ARCore
import ActiveRecord
import Foundation

/// The seeds' models with destroy dependencies everywhere they use them. Each variant names
/// its tables after the seeds' classes on purpose (each test uses a database of its own).
enum Destroying {
    final class Group: Model {
        override class var tableName: String { "Group" }  // the seeds' name, shared on purpose
        @Column var title: String = ""
        @HasMany(dependency: .destroy) var users: Query<User>
    }

    final class User: Model {
        override class var tableName: String { "User" }  // the seeds' name, shared on purpose
        @Column var name: String = ""
        @BelongsTo(dependency: .destroy) var group: Group?
        @HasManyThrough(UserProject.self, dependency: .destroy) var projects: Query<Project>
    }

    final class UserProject: Model {
        override class var tableName: String { "UserProject" }  // the seeds' name, shared on purpose
        @BelongsTo var user: User?
        @BelongsTo var project: Project?
    }

    final class Project: Model {
        override class var tableName: String { "Project" }  // the seeds' name, shared on purpose
        @Column var name: String = ""
        // Nullify: the users stay, the join rows that would point at nothing go (a foreign key).
        @HasManyThrough(UserProject.self, dependency: .nullify) var users: Query<User>
        @HasMany(dependency: .destroy) var issues: Query<Issue>
    }

    final class Issue: Model {
        override class var tableName: String { "Issue" }  // the seeds' name, shared on purpose
        @Column var title: String = ""
        @BelongsTo var project: Project?
    }
}

/// The same shapes with nullify (or no) dependencies.
enum Keeping {
    final class Group: Model {
        override class var tableName: String { "Group" }  // the seeds' name, shared on purpose
        @Column var title: String = ""
        @HasMany(dependency: .nullify) var users: Query<User>
    }

    final class User: Model {
        override class var tableName: String { "User" }  // the seeds' name, shared on purpose
        @Column(index: .unique) var name: String = ""
        @BelongsTo var group: Group?
        @HasManyThrough(UserProject.self, dependency: .nullify) var projects: Query<Project>
    }

    final class UserProject: Model {
        override class var tableName: String { "UserProject" }  // the seeds' name, shared on purpose
        @BelongsTo var user: User?
        @BelongsTo var project: Project?
    }

    final class Project: Model {
        override class var tableName: String { "Project" }  // the seeds' name, shared on purpose
        @Column var name: String = ""
        @HasManyThrough(UserProject.self) var users: Query<User>
    }

    final class ContentManager: Model {
        override class var tableName: String { "ContentManager" }  // the seeds' name, shared on purpose
        @Column var name: String = ""
        @HasMany(key: "ownerId") var ownedGroups: Query<Group>
    }
}
