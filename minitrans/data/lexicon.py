"""The lexicon of the embedded grammar (:mod:`minitrans.data.generated`): every word with its
translation, gender, plural, verb frame and the semantic tags that keep sentences sensible,
written as compact tables and parsed into typed entries. The grammar code reads only these.
"""

from __future__ import annotations

from dataclasses import dataclass

NOM, ACC, DAT = 0, 1, 2

# ---------------------------------------------------------------------------- lexicon tables
# Underscores in English entries stand for spaces ("looks_for" is "looks for").
# Nouns: English singular and plural, German singular, gender, German plural, tags. The first
# tag letter is the class (p person, a animal, t object, f food, v vehicle, b building or
# place, s story or song); the others say what may take the noun: w readable, l listenable,
# x openable, d drivable, r rideable, k catchable, h buildable, c visitable place one comes
# from, o surface to be on, u shelter to be under.
_NOUN_TABLE = """
man men Mann m Männer p | woman women Frau f Frauen p | child children Kind n Kinder p
girl girls Mädchen n Mädchen p | teacher teachers Lehrer m Lehrer p | doctor doctors Arzt m Ärzte p
friend friends Freund m Freunde p | king kings König m Könige p | queen queens Königin f Königinnen p
father fathers Vater m Väter p | mother mothers Mutter f Mütter p | brother brothers Bruder m Brüder p
sister sisters Schwester f Schwestern p | daughter daughters Tochter f Töchter p | son sons Sohn m Söhne p
baker bakers Bäcker m Bäcker p | guest guests Gast m Gäste p | uncle uncles Onkel m Onkel p
aunt aunts Tante f Tanten p | waiter waiters Kellner m Kellner p | singer singers Sänger m Sänger p
painter painters Maler m Maler p | thief thieves Dieb m Diebe p | pupil pupils Schüler m Schüler p
baby babies Baby n Babys p | grandmother grandmothers Großmutter f Großmütter p
grandfather grandfathers Großvater m Großväter p | lawyer lawyers Anwalt m Anwälte p
dancer dancers Tänzer m Tänzer p | driver drivers Fahrer m Fahrer p
nurse nurses Krankenschwester f Krankenschwestern p
dog dogs Hund m Hunde a | cat cats Katze f Katzen a | horse horses Pferd n Pferde ar
bird birds Vogel m Vögel a | mouse mice Maus f Mäuse a | cow cows Kuh f Kühe a | pig pigs Schwein n Schweine a
duck ducks Ente f Enten a | goose geese Gans f Gänse a | fox foxes Fuchs m Füchse a | wolf wolves Wolf m Wölfe a
rabbit rabbits Kaninchen n Kaninchen a | donkey donkeys Esel m Esel ar | frog frogs Frosch m Frösche a
chicken chickens Huhn n Hühner a | goat goats Ziege f Ziegen a | snake snakes Schlange f Schlangen a
book books Buch n Bücher twx | letter letters Brief m Briefe twx | newspaper newspapers Zeitung f Zeitungen tw
picture pictures Bild n Bilder t | ball balls Ball m Bälle tk | table tables Tisch m Tische tuo
chair chairs Stuhl m Stühle tuo | bed beds Bett n Betten tuo | door doors Tür f Türen tx
window windows Fenster n Fenster tx | key keys Schlüssel m Schlüssel t | bag bags Tasche f Taschen tx
hat hats Hut m Hüte t | coat coats Mantel m Mäntel t | shoe shoes Schuh m Schuhe t | cup cups Tasse f Tassen t
glass glasses Glas n Gläser t | bottle bottles Flasche f Flaschen tx | flower flowers Blume f Blumen t
box boxes Kiste f Kisten tx | lamp lamps Lampe f Lampen t | clock clocks Uhr f Uhren t
gift gifts Geschenk n Geschenke tx | ring rings Ring m Ringe t | plate plates Teller m Teller t
spoon spoons Löffel m Löffel t | knife knives Messer n Messer t | basket baskets Korb m Körbe t
stone stones Stein m Steine tk | umbrella umbrellas Regenschirm m Regenschirme t | pen pens Stift m Stifte t
apple apples Apfel m Äpfel fk | cake cakes Kuchen m Kuchen f | egg eggs Ei n Eier f
sausage sausages Wurst f Würste f | nut nuts Nuss f Nüsse f | potato potatoes Kartoffel f Kartoffeln f
soup soups Suppe f Suppen f | banana bananas Banane f Bananen f | carrot carrots Karotte f Karotten f
car cars Auto n Autos vd | bus buses Bus m Busse vd | train trains Zug m Züge vd
truck trucks Lastwagen m Lastwagen vd | tractor tractors Traktor m Traktoren vd
bicycle bicycles Fahrrad n Fahrräder v | boat boats Boot n Boote vo | ship ships Schiff n Schiffe vo
house houses Haus n Häuser bhc | garden gardens Garten m Gärten bc | city cities Stadt f Städte bc
village villages Dorf n Dörfer bc | forest forests Wald m Wälder bc | church churches Kirche f Kirchen bhc
school schools Schule f Schulen bhc | castle castles Schloss n Schlösser bhc | hotel hotels Hotel n Hotels bhc
station stations Bahnhof m Bahnhöfe bhc | park parks Park m Parks bc | tower towers Turm m Türme bh
bridge bridges Brücke f Brücken bhuo | street streets Straße f Straßen bo | roof roofs Dach n Dächer bo
tree trees Baum m Bäume bu | river rivers Fluss m Flüsse b | lake lakes See m Seen b
mountain mountains Berg m Berge b
story stories Geschichte f Geschichten sw | poem poems Gedicht n Gedichte sw | song songs Lied n Lieder sl
"""

# Adjectives: English, German stem (the form before an ending), order class (0 opinion,
# 1 size, 2 condition, 3 age, 4 colour: two adjectives come in this order in both languages),
# and the noun tags they may describe.
_ADJECTIVE_TABLE = """
good gut 0 patfvbs | bad schlecht 0 patfvbs | beautiful schön 0 patfvbs | ugly hässlich 0 patvb
nice nett 0 p | friendly freundlich 0 pa | clever klug 0 pa | funny lustig 0 pas | famous berühmt 0 pbs
lazy faul 0 pa | brave mutig 0 p | strange seltsam 0 patfvbs | expensive teur 0 tfvb | cheap billig 0 tfv
rich reich 0 p | poor arm 0 p | loud laut 0 pasv | quiet ruhig 0 pab | sweet süß 0 fa | strong stark 0 pa
big groß 1 patfvb | small klein 1 patfvb | long lang 1 tvbs | short kurz 1 tvbs | heavy schwer 1 tv
fat dick 1 pa | thin dünn 1 pa
tired müd 2 pa | happy glücklich 2 pa | sad traurig 2 pas | angry wütend 2 pa | hungry hungrig 2 pa
wet nass 2 patvb | dry trocken 2 tfb | clean sauber 2 tvb | dirty schmutzig 2 patvb | warm warm 2 tfb
cold kalt 2 tfb | fast schnell 2 pav | slow langsam 2 pav | fresh frisch 2 f
old alt 3 patvbs | young jung 3 pa | new neu 3 tvbs
red rot 4 atfvb | blue blau 4 atfvb | green grün 4 atfvb | black schwarz 4 atfvb | white weiß 4 atfvb
yellow gelb 4 atfvb | brown braun 4 atfvb | grey grau 4 atfvb | dark dunkl 4 tvb
"""

# Verbs: English 3rd singular and plural, German 3rd singular and plural, frame, subject tags,
# object tags, recipient tags. Frames: i intransitive, a accusative object, d dative object,
# g accusative object and optional dative recipient, c "that" clause.
_VERB_TABLE = """
sleeps sleep schläft schlafen i pa | runs run läuft laufen i pa | laughs laugh lacht lachen i p
sings sing singt singen i pa | swims swim schwimmt schwimmen i pa | waits wait wartet warten i pa
works work arbeitet arbeiten i p | plays play spielt spielen i pa | dances dance tanzt tanzen i p
cries cry weint weinen i p
sees see sieht sehen a pa patfvb | watches watch beobachtet beobachten a pa pav
finds find findet finden a pa patfv | looks_for look_for sucht suchen a pa patfv
reads read liest lesen a p w | writes write schreibt schreiben a p wl | carries carry trägt tragen a p ptaf
holds hold hält halten a p tfa | takes take nimmt nehmen a p tf | buys buy kauft kaufen a p tfvah
sells sell verkauft verkaufen a p tfvah | eats eat isst essen a pa f | loves love liebt lieben a pa pa
likes like mag mögen a pa patfvbs | knows know kennt kennen a pa pabs | visits visit besucht besuchen a p pc
draws draw zeichnet zeichnen a p patfvb | paints paint malt malen a p patfvb
washes wash wäscht waschen a p patv | catches catch fängt fangen a pa ak | hears hear hört hören a pa pal
opens open öffnet öffnen a p x | builds build baut bauen a p h | drives drive fährt fahren a p d
rides ride reitet reiten a p r | needs need braucht brauchen a pa tfv | has have hat haben a pa patfvb
calls call ruft rufen a p pa | greets greet grüßt grüßen a p p | forgets forget vergisst vergessen a p pts
cooks cook kocht kochen a p f | throws throw wirft werfen a p tf | meets meet trifft treffen a p p
chases chase jagt jagen a pa pa | feeds feed füttert füttern a p a | counts count zählt zählen a p patfvb
cleans clean putzt putzen a p tvh | protects protect schützt schützen a pa pah
helps help hilft helfen d pa pa | thanks thank dankt danken d p p | follows follow folgt folgen d pa pa
answers answer antwortet antworten d p p | trusts trust vertraut vertrauen d pa pa
gives give gibt geben g p tf pa | shows show zeigt zeigen g p patfvb p | sends send schickt schicken g p tw p
brings bring bringt bringen g p tf pa
says say sagt sagen c p | knows know weiß wissen c p | thinks think denkt denken c p
believes believe glaubt glauben c p | hopes hope hofft hoffen c p
"""

# Prepositions: English, German, case, tags of the noun they modify, tags of their object.
_PREPOSITION_TABLE = """
with mit dat patfvb patfv | without ohne acc patfvb patfv | for für acc tfws pa | about über acc ws pab
next_to neben dat patvb patvb | behind hinter dat patvb bvu | in_front_of vor dat patvb bv
under unter dat pat u | on auf dat tfa o | from aus dat pa c
"""

_ADVERB_TABLE = """
today heute | tomorrow morgen | now jetzt | then dann | often oft | sometimes manchmal
usually normalerweise | suddenly plötzlich | later später | finally endlich | here hier
again wieder | unfortunately leider
"""

_SUBORDINATOR_TABLE = "because weil | although obwohl | while während | if wenn | before bevor"
_COORDINATOR_TABLE = "and und | but aber"


@dataclass(frozen=True)
class Noun:
    en_sg: str
    en_pl: str
    de_sg: str
    gender: str  # "m", "f" or "n"
    de_pl: str
    tags: str

    def en(self, is_plural: bool) -> str:
        return self.en_pl if is_plural else self.en_sg

    def de(self, is_plural: bool, case: int) -> str:
        if not is_plural:
            return self.de_sg
        if case == DAT and not self.de_pl.endswith(("n", "s")):
            return self.de_pl + "n"  # dative plural: den Hunden, den Kindern
        return self.de_pl


@dataclass(frozen=True)
class Adjective:
    en: str
    de_stem: str
    order: int
    tags: str


@dataclass(frozen=True)
class Verb:
    en_sg: str
    en_pl: str
    de_sg: str
    de_pl: str
    frame: str
    subject_tags: str
    object_tags: str = ""
    recipient_tags: str = ""

    @property
    def object_case(self) -> int:
        return DAT if self.frame == "d" else ACC

    def en(self, is_plural: bool) -> list[str]:
        return (self.en_pl if is_plural else self.en_sg).split()

    def de(self, is_plural: bool) -> str:
        return self.de_pl if is_plural else self.de_sg


@dataclass(frozen=True)
class Preposition:
    en: str
    de: str
    case: int
    head_tags: str
    object_tags: str


@dataclass(frozen=True)
class Determiner:
    en_sg: str
    en_pl: str  # "" for a bare plural
    de_stem: str  # "" for the definite article, else an ein-word stem


@dataclass(frozen=True)
class Word:
    """An adverb or a conjunction: a word with one fixed translation."""

    en: str
    de: str


def _rows(table: str) -> list[list[str]]:
    rows = (row.split() for line in table.strip().splitlines() for row in line.split("|"))
    return [[field_.replace("_", " ") for field_ in row] for row in rows if row]


_CASES = {"acc": ACC, "dat": DAT}
NOUNS: dict[str, Noun] = {r[0]: Noun(*r) for r in _rows(_NOUN_TABLE)}
ADJECTIVES: dict[str, Adjective] = {r[0]: Adjective(r[0], r[1], int(r[2]), r[3]) for r in _rows(_ADJECTIVE_TABLE)}
# Keyed by English 3rd singular; "that"-clause verbs get a " that" suffix ("knows that" is
# wissen, "knows" is kennen).
VERBS: dict[str, Verb] = {(r[0] + " that" if r[4] == "c" else r[0]): Verb(*r) for r in _rows(_VERB_TABLE)}
PREPOSITIONS: dict[str, Preposition] = {
    r[0]: Preposition(r[0], r[1], _CASES[r[2]], r[3], r[4]) for r in _rows(_PREPOSITION_TABLE)
}
ADVERBS: dict[str, Word] = {r[0]: Word(*r) for r in _rows(_ADVERB_TABLE)}
SUBORDINATORS: dict[str, Word] = {r[0]: Word(*r) for r in _rows(_SUBORDINATOR_TABLE)}
COORDINATORS: dict[str, Word] = {r[0]: Word(*r) for r in _rows(_COORDINATOR_TABLE)}
DETERMINERS: dict[str, Determiner] = {
    "the": Determiner("the", "the", ""),
    "a": Determiner("a", "", "ein"),
    "no": Determiner("no", "no", "kein"),
    "his": Determiner("his", "his", "sein"),
    "her": Determiner("her", "her", "ihr"),
    "their": Determiner("their", "their", "ihr"),
    "my": Determiner("my", "my", "mein"),
    "our": Determiner("our", "our", "unser"),
}
COMPLEMENTIZER = Word("that", "dass")

_WORD_CLASSES = (NOUNS, ADJECTIVES, VERBS, PREPOSITIONS, ADVERBS, SUBORDINATORS, COORDINATORS, DETERMINERS)
LEXICON_SIZE: int = sum(map(len, _WORD_CLASSES)) + 1  # + the complementizer "that"
