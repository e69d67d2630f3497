// ActiveRecordC: the C ABI shim (libactiverecord.so, include/activerecord.h).
// Intentionally empty until issue 7 builds it; no placeholder API is exported.
import ActiveRecord
