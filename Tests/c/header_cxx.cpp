// include/activerecord.h from C++ (make c-examples builds this with g++ -std=c++11
// -Wall -Wextra -Werror -pedantic): the header compiles as C++, its declarations have
// C linkage (the program links against libactiverecord.so) and the enums keep their values.
#include "activerecord.h"

#include <cstdio>
#include <cstring>

static_assert(AR_OK == 0, "AR_OK is 0");
static_assert(AR_DONE == 1 && AR_NOT_FOUND == 2 && AR_MISUSE == 3 && AR_ERROR == 13, "ar_result values");
static_assert(AR_TYPE_TEXT == 1 && AR_TYPE_DECIMAL == 7, "ar_type values");
static_assert((AR_COLUMN_FLAG_NULLABLE | AR_COLUMN_FLAG_INDEXED | AR_COLUMN_FLAG_UNIQUE) == 7, "ar_column_flag values");
static_assert(sizeof(ar_result) == sizeof(int), "ar_result is an int-sized enum");

int main() {
    ar_database *db = nullptr;
    ar_model *model = nullptr;
    ar_record *record = nullptr;
    const char *text = nullptr;
    bool ok = ar_open(":memory:", &db) == AR_OK
        && ar_model_define(db, "Cpp", &model) == AR_OK
        && ar_model_add_column(model, "name", AR_TYPE_TEXT, AR_COLUMN_FLAG_REQUIRED) == AR_OK
        && ar_record_new(model, &record) == AR_OK
        && ar_record_set_text(record, "name", "from C++") == AR_OK
        && ar_record_save(record) == AR_OK
        && ar_record_get_text(record, "name", &text) == AR_OK
        && text != nullptr && std::strcmp(text, "from C++") == 0;
    if (!ok) std::printf("header_cxx: %s\n", ar_last_error(db));
    ar_record_free(record);
    ar_model_free(model);
    ar_close(db);
    return ok ? 0 : 1;
}
