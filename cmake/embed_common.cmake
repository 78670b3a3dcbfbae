# What the embedding scripts (embed_migrations.cmake, embed_sql.cmake)
# share: a file as a C byte array, and writing the generated C file only
# when it changed (so an unchanged SQL tree rebuilds nothing).

# embed_bytes(FILE NAME VAR): appends "static const char NAME[] = {...};"
# holding FILE's bytes and a terminating 0 to VAR.
function(embed_bytes file cname var)
  file(READ ${file} hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  set(${var} "${${var}}static const char ${cname}[] = {${hex} 0};\n" PARENT_SCOPE)
endfunction()

# embed_write(OUT BODY): writes BODY to OUT unless OUT already holds it.
function(embed_write out body)
  file(WRITE ${out}.tmp "${body}")
  file(COPY_FILE ${out}.tmp ${out} ONLY_IF_DIFFERENT)
endfunction()
