/* importers: the table of import sources compiled in (see importer.h). */
#ifndef PARLEY_IMPORT_IMPORTERS_H
#define PARLEY_IMPORT_IMPORTERS_H

#include "import/importer.h"

/* Every source, ending with NULL. */
extern const importer_def_t *const importers_table[];

/* The source called name, or NULL. */
const importer_def_t *importers_find(const char *name);

#endif
