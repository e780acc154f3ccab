-- The language a user chose for the console ('zh-CN' or 'en'); NULL until they choose, when
-- their browser's cookie or Accept-Language decides.
ALTER TABLE users ADD COLUMN locale TEXT;
