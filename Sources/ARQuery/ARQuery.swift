// ARQuery: the lazy fetcher and the predicate language.
// Intentionally empty until issue 3 builds it; no placeholder API is exported.
import ARCore
