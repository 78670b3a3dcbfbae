-- search_irregular: the irregular forms of English and Russian words, a
-- table written for parley (docs/search.md, "Irregular forms"), and the
-- lookup the search's query side uses (parley_forms_query in search_forms.sql):
-- the words a Snowball stemmer does not relate to their lemma (mouse/mice,
-- go/went, good/better, человек/люди, идти/шёл, хороший/лучше). Nothing
-- is stored in tables: the table is the text of parley_irregular_table,
-- made into a map (parley_irregular_map, a JSON constant) when this file
-- is applied; parley_irregular_group looks a word up in it.
--
-- The table: one group of related words a line, lower case; "#" starts a
-- comment. A word of a line finds the others of its line (a word on
-- several lines finds the words of each). Only groups the stemmers of
-- search_languages's default (english, russian) do not relate are here
-- (checked with to_tsvector: a group whose words all have one stem is
-- left out); a group may list forms of one stem (людей, людям beside
-- люди) so that each, typed as a query word, finds the group. A word
-- with "ё" is also read with "е". Marks, for homographs whose other
-- sense would bring many false hits (decided per word, said on its line):
--   <word  found from its group, but as a query word it finds only its
--          own forms;
--   !word  as a query word it finds its group, but the group's words do
--          not bring it;
--   =word  matched as written only, not through its stem (the stem is
--          another word's: lives → live, leaves → leav, мать → мат).
CREATE OR REPLACE FUNCTION parley_irregular_table() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $table$
    SELECT $$
# English irregular verbs: base, irregular present forms, past, past participle
arise arose arisen
awake awoke awoken
be am is are was were been being   # stop words of every configuration: matched as written
bear bore borne   # born left out: the adjective ("born in 1990") would bring every "bear"
become became
begin began begun
bend bent
bind <bound   # bound: also "upper bound", "bound to": found from bind, not expanded
bite bitten   # bit left out: "a bit" is in every other message
bleed bled
blow blew blown
break broke broken
breed bred
bring brought
build built
burn burnt
buy bought
catch caught
choose chose chosen
cling clung
come came
creep crept
deal dealt
dig dug
do does did done doing
draw drew drawn
dream dreamt
drink drank drunk
drive drove driven
eat ate eaten
fall fell fallen
feed fed
feel felt
fight fought
find found   # found (to found a company) is rare in chats: both ways
flee fled
fly flew flown
forbid forbade forbidden
forget forgot forgotten
forgive forgave forgiven
freeze froze frozen
get got gotten
give gave given
go goes went gone
grow grew grown
hang hung
have has had having
hear heard
hide hid hidden
hold held
keep kept
kneel knelt
know knew known
lay laid
lead led
lean leant
leap leapt
learn learnt
leave <left   # left: also the side and politics: found from leave, not expanded
lend lent
lie lain <lay   # lay: also the base of lay/laid (below): found from lie, not expanded
light lit
lose lost
make made
mean meant
meet met
mislead misled
mistake mistook mistaken
overcome overcame
overtake overtook overtaken
override overrode overridden
pay paid
prove proven
rebuild rebuilt
rewrite rewrote rewritten
ride rode ridden
ring rang rung
rise <rose risen   # rose: also the flower and the name
run ran
say said
see <saw seen   # saw: also the tool; "saw" finds its own forms only
seek sought
sell sold
send sent
sew sewn
shake shook shaken
shine shone
shoot shot
show shown
shrink shrank shrunk
sing sang sung
sink sank sunk
sit sat
slay slew slain
sleep slept
slide slid
smell smelt
speak spoke spoken
speed sped
spell spelt
spend spent
spill spilt
spin spun
spit spat
spoil spoilt
spring sprang sprung
stand stood
steal stole stolen
stick stuck
sting stung
stink stank stunk
strike struck stricken
string strung
strive strove striven
swear swore sworn
sweep swept
swell swollen
swim swam swum
swing swung
take took taken
teach taught
tear tore torn
tell told
think thought
throw threw thrown
tread trod trodden
undergo underwent undergone
understand understood
undertake undertook undertaken
undo undid undone
uphold upheld
wake woke woken
wear wore worn
weave wove woven
weep wept
win won
withdraw withdrew withdrawn
withhold withheld
wring wrung
write wrote written
foresee foresaw foreseen
oversee oversaw overseen
overhear overheard
overthrow overthrew overthrown
misunderstand misunderstood
outgrow outgrew outgrown
dwell dwelt
sow sown

# English irregular plurals (Latin and Greek ones too): singular, plural
mouse mice
child children
person people
man men
woman women
foot feet
tooth teeth
goose geese
ox oxen
louse lice
criterion criteria
phenomenon phenomena
analysis analyses
crisis crises
thesis theses
hypothesis hypotheses
diagnosis diagnoses
parenthesis parentheses
basis =bases   # bases: also the plural of base (stem "base"): as written
axis axes
index indices
matrix matrices
vertex vertices
appendix appendices
datum data
cactus cacti
fungus fungi
nucleus nuclei
radius radii
stimulus stimuli
alumnus alumni
curriculum curricula
bacterium bacteria
millennium millennia
schema schemata
penny pence
leaf <=leaves   # leaves: stem "leav", leave's: as written, and "leaves" (mostly the verb) not expanded
knife knives
life <=lives   # lives: stem "live", the verb's: as written, and "lives" not expanded
wife wives
wolf wolves
half halves
shelf shelves
calf calves
loaf loaves
thief thieves
self selves
elf elves
scarf scarves

# English comparatives and superlatives
good better best
!well better best   # well (as well, well, ...) finds better and best; they do not bring every "well"
bad worse worst
far farther further farthest furthest
little less least
many more most
much more most
old elder eldest

# Russian suppletive and irregular forms: verbs (infinitive, present or future, past), comparatives, nouns
человек люди людей людям людьми людях
ребёнок ребенок дети детей детям детьми детях
идти иду идёшь идёт идём идёте идут шёл шла шло шли
пойти пойду пойдёт пойдём пойдут пошёл пошла пошло пошли
прийти приду придёт придём придут пришёл пришла пришло пришли
уйти уйду уйдёт уйдём уйдут ушёл ушла ушло ушли
найти найду найдёт найдём найдут нашёл нашла нашло нашли
выйти выйду выйдет выйдем выйдут вышел вышла вышло вышли
зайти зайду зайдёт зайдём зайдут зашёл зашла зашло зашли
пройти пройду пройдёт пройдём пройдут прошёл прошла прошло прошли
перейти перейду перейдёт перейдём перейдут перешёл перешла перешло перешли
войти войду войдёт войдём войдут вошёл вошла вошло вошли
хороший хорошо лучше лучший
плохой плохо хуже худший
большой больше больший
маленький меньше меньший
много больше
мало меньше
высокий выше высший
низкий ниже низший
далёкий далеко дальше
близкий близко ближе
долгий долго дольше
короткий короче
лёгкий легко легче
старый старше старший
молодой младше моложе младший
дорогой дорого дороже
дешёвый дёшево дешевле
простой просто проще
громкий громко громче
тихий тихо тише
широкий шире
частый часто чаще
редкий редко реже
поздний поздно позже
ранний рано раньше
брать беру берёт берут брал взять возьму возьмёт возьмём возьмут взял взяла
класть кладу кладёт кладут клал положить положу положит положил
ловить ловлю ловит поймать поймаю поймает поймал
говорить говорю говорит сказать скажу скажет скажут сказал сказала
!есть ем ешь ест едим едите едят ел ела ели   # есть (there is) finds the forms of "to eat"; they do not bring every "есть"
дать дам дашь даст дадим дадите дадут дал дала
ехать еду едешь едет едем едете едут ехал
писать пишу пишешь пишет пишем пишете пишут писал писала написать напишу напишет напишут
быть буду будет будем будут был была было были
мочь могу может можем могут мог могла могли
хотеть хочу хочет хотим хотят хотел
бежать бегу бежит бегут
жить живу живёт живут жил
лечь лягу ляжет лёг легла
сесть сяду сядет сел села
расти расту растёт рос росла
вести веду ведёт вёл вела
нести несу несёт нёс несла
умереть умру умрёт умер умерла
начать начну начнёт начнут начал
понять пойму поймёт поймут понял поняла
принять приму примет примут принял
снять сниму снимет снял
=мать матерь матери матерью матерей   # мать as written: its stem "мат" is another word's
дочь дочери дочерью дочерей
время времени временем времена
имя имени именем имена
сын сыновья сыновей
друг друзья друзей друзьям
год =лет   # лет as written: its stem "лет" is лето's
небо небеса
чудо чудеса
хозяин хозяева
господин господа
котёнок котята

# Left out: grind/ground, wind/wound (the nouns are the common words),
# medium/media (the size, social media), die/dice, and the verbs whose
# forms are all one word (put, cut, set, hit, cost, let, read) or that
# the stemmer relates (formula/formulae, брат/братья, стул/стулья).
$$::text
$table$;

-- The table as a map: each word that finds a group → the other words
-- it finds, as the text of a text[] (in table order, "=" before a word
-- matched as written); about 900 words.
CREATE OR REPLACE FUNCTION parley_irregular_map_build() RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    WITH g AS (
        SELECT o AS gid, string_to_array(btrim(split_part(line, '#', 1)), ' ') AS ws
        FROM string_to_table(parley_irregular_table(), E'\n') WITH ORDINALITY AS t(line, o)),
    w AS (
        SELECT gid, i, ltrim(x, '<!=') COLLATE "C" AS word, strpos(x, '<') = 0 AS finds,
               strpos(x, '!') = 0 AS reached, strpos(x, '=') > 0 AS as_written
        FROM g, unnest(ws) WITH ORDINALITY AS u(x, i)
        WHERE x <> ''),
    w2 AS (
        SELECT * FROM w
        UNION ALL
        SELECT gid, i, translate(word, 'ё', 'е'), finds, reached, as_written FROM w
        WHERE strpos(word, 'ё') > 0),
    pairs AS (
        SELECT k.word AS key, CASE WHEN t.as_written THEN '=' ELSE '' END || t.word AS target,
               min(t.gid * 1000 + t.i * 2 + (strpos(t.word, 'ё') = 0)::integer) AS ord
        FROM w2 k JOIN w2 t ON t.gid = k.gid AND t.word <> k.word
        WHERE k.finds AND t.reached
        GROUP BY 1, 2)
    SELECT jsonb_object_agg(key, targets)
    FROM (SELECT key, array_agg(target ORDER BY ord)::text AS targets FROM pairs GROUP BY key) x
$$;

-- parley_irregular_map() is that map as a constant, made here each time
-- this file is applied (every start): a search's session then reads
-- 35 kB of JSON once instead of building the map (20-40 ms more for the
-- first search of each connection on the 2-core test machine).
DO $$
BEGIN
    EXECUTE format('CREATE OR REPLACE FUNCTION parley_irregular_map() RETURNS jsonb '
                   'LANGUAGE sql IMMUTABLE PARALLEL SAFE AS %L',
                   format('SELECT %L::jsonb', parley_irregular_map_build()::text));
END
$$;

-- The other words of w's group (w in any case; lower case, "=" before a
-- word to match as written only), '{}' for a word of no group. The map is
-- a constant of this expression's plan, which PL/pgSQL keeps for the
-- session: one call is a lookup in it.
CREATE OR REPLACE FUNCTION parley_irregular_group(w text) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN coalesce((parley_irregular_map() ->> lower(w))::text[], '{}');
END
$$;
