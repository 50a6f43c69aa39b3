// Vocabulary of the generated data: a German account, like the upstream's examples.
const list = (words: string): readonly string[] => words.split('|')

export const FEMALE_FIRST_NAMES = list(
  'Maxi|Anna|Lena|Sophie|Marie|Laura|Julia|Katrin|Sabine|Petra|Claudia|Heike|Monika|Ursula|Johanna|Clara|Greta',
)
export const MALE_FIRST_NAMES = list(
  'Max|Paul|Felix|Jonas|Lukas|Leon|Thomas|Michael|Andreas|Stefan|Jürgen|Klaus|Wolfgang|Uwe|Matthias|Emil|Anton',
)
export const LAST_NAMES = list(
  'Mustermann|Müller|Schmidt|Schneider|Fischer|Weber|Meyer|Wagner|Becker|Schulz|Hoffmann|Schäfer|Koch|Bauer|' +
    'Richter|Klein|Wolf|Schröder|Neumann|Schwarz|Zimmermann|Braun|Krüger|Hofmann|Hartmann|Lange|Schmitt|' +
    'Werner|Krause|Meier|Lehmann|Schmid|Schulze|Maier|Köhler|Herrmann|König|Walter|Mayer|Huber',
)
export const TITLES = list('Dr.|Prof.|Dr. Dr.|Dipl.-Ing.')
export const COMPANY_WORDS = list(
  'Nordlicht|Elbtal|Sonnenhof|Kranich|Lindenbaum|Bergblick|Hafenkante|Weitblick|Rotkehlchen|Ahorn|Mühlbach|' +
    'Eichenwald|Silberfluss|Feldberg|Kiefernweg|Brückenschlag',
)
export const COMPANY_SUFFIXES = list('GmbH|AG|GmbH & Co. KG|e.K.|UG (haftungsbeschränkt)|OHG')
export const BRANCHES = list('Consulting|Logistik|Software|Bau|Design|Handel|Medien|Events')
/** city, zip, state code */
export const CITIES = list(
  'Leipzig,04109,SN|Dresden,01067,SN|Berlin,10115,BE|Hamburg,20095,HH|München,80331,BY|Köln,50667,NW|' +
    'Frankfurt am Main,60311,HE|Stuttgart,70173,BW|Hannover,30159,NI|Erfurt,99084,TH',
).map((entry) => {
  const [city = '', zip = '', state = ''] = entry.split(',')
  return { city, zip, state }
})
export const STREETS = list(
  'Hauptstraße|Bahnhofstraße|Gartenweg|Lindenallee|Schillerstraße|Goethestraße|Marktplatz|Bergstraße|Am Hafen',
)
export const COUNTRY_NAMES: Record<string, string> = {
  DE: 'Deutschland',
  AT: 'Österreich',
  CH: 'Schweiz',
  FR: 'Frankreich',
  NL: 'Niederlande',
  PL: 'Polen',
  GB: 'Vereinigtes Königreich',
  US: 'Vereinigte Staaten',
}
export const TAG_NAMES = list(
  'Kunde|Lead|Partner|Newsletter|VIP|Messe 2023|Lieferant|Presse|Interessent|NEW-FANCY-TAG|Bestandskunde',
)
export const POSITIONS = list('Geschäftsführer|Einkauf|Vertrieb|Assistenz|Projektleitung|IT')
/** Labels of a connection to a person, and to a company. */
export const PERSON_CONNECTIONS = list('Ehepartner|Kollege|Steuerberater|Empfehlung von')
export const COMPANY_CONNECTIONS = list('Arbeitgeber|Lieferant|Partner|Muttergesellschaft')
export const NETWORKS = list('xing|linkedin')
export const DEAL_WORDS = list('Rahmenvertrag|Wartung|Lizenzen|Beratung|Workshop|Relaunch')
export const TASK_NAMES = list(
  'Angebot nachfassen|Rückruf vereinbaren|Vertrag prüfen|Unterlagen senden|Termin vorbereiten',
)

/** The upstream derives `gender` from the first name when none is given. */
export function genderOf(firstName: string | null | undefined): string {
  if (!firstName) return 'gender_unknown'
  if (FEMALE_FIRST_NAMES.includes(firstName)) return 'female_auto'
  if (MALE_FIRST_NAMES.includes(firstName)) return 'male_auto'
  return 'gender_unknown'
}
