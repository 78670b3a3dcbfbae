/* importers: the import sources compiled in (see importers.h). A new
 * source is its file(s) in src/import/, its SQL, and one line here. */
#include "import/importers.h"

#include <string.h>

#include "import/agent_import.h"
#include "import/chatwise_import.h"
#include "import/tg_import.h"

const importer_def_t *const importers_table[] = {
    &tg_import_source, &agent_import_source, &codex_import_source, &chatwise_import_source, NULL,
};

const importer_def_t *importers_find(const char *name)
{
    for (int i = 0; name && importers_table[i]; i++)
        if (strcmp(importers_table[i]->name, name) == 0)
            return importers_table[i];
    return NULL;
}
